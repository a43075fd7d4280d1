"""Teachers: ``model.teacher`` in a recipe, any folder kind as the teacher, the vectors cached once and reused,
looked up per example, and the PCA basis against numpy's SVD."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sentcl.config import ConfigError, TrainConfig, from_dict, load_config, to_dict
from sentcl.config.teacher import TeacherConfig
from sentcl.files.paths import resolve_model_path
from sentcl.methods import teacher_cache
from sentcl.methods.teacher_cache import TEXTS_FILE, teacher_vectors
from sentcl.methods.teachers import Teachers
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.training.validation import validate

TEXTS = ["a man plays the guitar", "the dog runs", "a man plays the guitar", "stock price falls", "a\nb"]


# ---------------------------------------------------------------- the recipe


def test_teacher_is_a_name_a_list_or_mappings_and_round_trips_through_a_dict() -> None:
    one = load_config(TrainConfig, None, ["model.teacher=all-MiniLM-L6-v2"])
    assert one.model.teacher == [TeacherConfig("all-MiniLM-L6-v2")]
    many = load_config(
        TrainConfig, None, ["model.teacher=[a, {path: b, weight: 3, pooler: cls, max_length: 64}]"]
    )
    assert many.model.teacher == [TeacherConfig("a"), TeacherConfig("b", 3.0, "cls", 64)]
    assert from_dict(TrainConfig, to_dict(many)).model.teacher == many.model.teacher  # config.json's form


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("[{path: a, weight: 0}]", "model.teacher.weight must be positive"),
        ("[{path: a, weight: -1}]", "model.teacher.weight must be positive"),
        ("[{weight: 2}]", r"model.teacher\[0\].path is missing"),
        ("[{path: a, wt: 2}]", r"model.teacher\[0\].wt"),
        ("[{path: a, pooler: nope}]", "model.teacher.pooler"),
        ("[]", "empty list"),
        ("[3]", r"model.teacher\[0\]=3"),
    ],
)
def test_bad_teachers_are_config_errors_naming_the_field(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(TrainConfig, None, [f"model.teacher={value}"])


def test_a_teacher_method_needs_a_teacher_and_other_methods_refuse_one() -> None:
    for method in ("distill_mse", "distill_kl"):
        with pytest.raises(ConfigError, match="set model.teacher"):
            validate(load_config(TrainConfig, None, [f"objective.name={method}"]), environment=False)
    with pytest.raises(ConfigError, match="model.teacher.*ignored by unsup_simcse.*distill_mse"):
        validate(load_config(TrainConfig, None, ["model.teacher=x"]), environment=False)
    with pytest.raises(ConfigError, match="model.teacher_mapping"):
        load_config(TrainConfig, None, ["model.teacher_mapping=svd"])


# ---------------------------------------------------------------- the cache


class Counting:
    """Wraps ``open_teacher``: counts the encoders opened and the sentences they encode."""

    def __init__(self) -> None:
        self.opened, self.sentences = 0, 0
        self.real = teacher_cache.open_teacher

    def __call__(self, teacher: TeacherConfig, device: str | None = None) -> Any:  # noqa: ANN401
        encoder = self.real(teacher, device)
        self.opened += 1
        encode = encoder.encode

        def counted(sentences: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
            self.sentences += len(sentences)
            return encode(sentences, *args, **kwargs)

        encoder.encode = counted
        return encoder


@pytest.fixture()
def counting(monkeypatch: pytest.MonkeyPatch) -> Counting:
    counter = Counting()
    monkeypatch.setattr(teacher_cache, "open_teacher", counter)
    return counter


@pytest.fixture(scope="module")
def sentcl_teacher(tiny_bert: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentcl folder saved by SentenceEncoder.save_pretrained (mean pooling)."""
    folder = tmp_path_factory.mktemp("teacher") / "sentcl"
    SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg").save_pretrained(folder)
    return folder


def distinct(texts: list[str]) -> list[str]:
    return list(dict.fromkeys(texts))


def test_vectors_are_encoded_once_and_reused_and_equal_the_teachers_encode(
    sentcl_teacher: Path, tmp_path: Path, counting: Counting
) -> None:
    teacher, texts = TeacherConfig(str(sentcl_teacher)), distinct(TEXTS)
    first = teacher_vectors(teacher, texts, tmp_path, shard_size=2)
    assert (counting.opened, counting.sentences) == (1, len(texts))
    lines = (first.folder.parent / TEXTS_FILE).read_text(encoding="utf-8").splitlines()
    assert lines == [t.replace("\n", " ") for t in texts], "one distinct text a line, first-occurrence order"
    second = teacher_vectors(teacher, texts, tmp_path, shard_size=2)
    assert (counting.opened, counting.sentences) == (1, len(texts)), "the second call opened nothing"
    assert second.folder == first.folder
    reference = SentenceEncoder.from_pretrained(str(sentcl_teacher)).encode(
        [t.replace("\n", " ") for t in texts]
    )
    np.testing.assert_allclose(second.gather(np.arange(len(texts))), reference, atol=1e-5, rtol=0)
    # another corpus, or the same teacher truncated elsewhere, is another entry
    teacher_vectors(teacher, [*texts, "one more"], tmp_path, shard_size=2)
    teacher_vectors(TeacherConfig(str(sentcl_teacher), max_length=4), texts, tmp_path, shard_size=2)
    assert (
        counting.opened == 3 and len([p for p in tmp_path.iterdir() if p.is_dir()]) == 3
    )  # entries (and their locks)


def test_a_teacher_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model.teacher: .*nowhere cannot be opened"):
        teacher_vectors(TeacherConfig(str(tmp_path / "nowhere")), ["a dog"], tmp_path / "cache")


def test_an_interrupted_encode_resumes_with_the_missing_shards_only(
    sentcl_teacher: Path, tmp_path: Path, counting: Counting
) -> None:
    teacher, texts = TeacherConfig(str(sentcl_teacher)), distinct(TEXTS)
    done = teacher_vectors(teacher, texts, tmp_path, shard_size=2)
    expected = done.gather(np.arange(len(texts)))
    (done.folder / "shard-00001.json").unlink()  # as if killed before shard 1 was finished
    (done.folder / "manifest.json").unlink()
    resumed = teacher_vectors(teacher, texts, tmp_path, shard_size=2)
    assert counting.sentences == len(texts) + 2, "only shard 1's two sentences were encoded again"
    np.testing.assert_array_equal(resumed.gather(np.arange(len(texts))), expected)


def test_a_sentence_transformers_teacher_matches_sentence_transformers(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    texts = distinct(TEXTS)
    got = teacher_vectors(TeacherConfig("all-MiniLM-L6-v2"), texts, tmp_path).gather(np.arange(len(texts)))
    ref = SentenceTransformer(resolve_model_path("all-MiniLM-L6-v2"), device="cpu").encode(
        [t.replace("\n", " ") for t in texts]
    )
    assert got.shape == (len(texts), 384)
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=0)


def test_an_onnx_export_is_a_teacher(tiny_bert: Path, tmp_path: Path) -> None:
    from sentcl.interop.onnx import export_onnx

    folder = export_onnx(str(tiny_bert), tmp_path / "onnx", pooler="avg")
    texts = distinct(TEXTS)[:4]
    got = teacher_vectors(TeacherConfig(str(folder)), texts, tmp_path / "cache").gather(np.arange(4))
    torch_model = SentenceEncoder.from_pretrained(str(tiny_bert), pooler="avg")
    np.testing.assert_allclose(got, torch_model.encode(texts), atol=1e-4, rtol=0)


# ---------------------------------------------------------------- the lookup and the PCA


def teachers_of(folder: Path, cache: Path, examples: list[Any], *overrides: str) -> Teachers:
    cfg = load_config(
        TrainConfig,
        None,
        [
            "objective.name=distill_mse",
            f"model.teacher=[{{path: '{folder}', weight: 3}}, {{path: '{folder}', pooler: cls, weight: 1}}]",
            f"model.teacher_cache={cache}",
            *overrides,
        ],
    )
    return Teachers.build(cfg, examples, shard_size=3)


def test_each_example_gets_its_source_sentences_vectors_from_every_teacher(
    sentcl_teacher: Path, tmp_path: Path
) -> None:
    examples = [("the dog runs", "der hund rennt"), ("a man", "ein mann"), ("the dog runs", "le chien court")]
    teachers = teachers_of(sentcl_teacher, tmp_path, examples)
    assert teachers.weights == [0.75, 0.25]
    meta = teachers.meta(examples[::-1])
    avg = SentenceEncoder.from_pretrained(str(sentcl_teacher), pooler="avg").encode(["the dog runs", "a man"])
    cls = SentenceEncoder.from_pretrained(str(sentcl_teacher), pooler="cls").encode(["the dog runs", "a man"])
    np.testing.assert_allclose(meta["teacher_0"].numpy(), avg[[0, 1, 0]], atol=1e-5, rtol=0)
    np.testing.assert_allclose(meta["teacher_1"].numpy(), cls[[0, 1, 0]], atol=1e-5, rtol=0)


def test_pca_basis_is_numpys_svd_of_the_centred_mean_vectors(sentcl_teacher: Path, tmp_path: Path) -> None:
    from helpers.data import write_corpus

    examples = write_corpus(tmp_path / "c.txt", 60).read_text(encoding="utf-8").splitlines()
    teachers = teachers_of(sentcl_teacher, tmp_path / "cache", examples)
    ids = teachers.rows_of(list(dict.fromkeys(examples)))
    x = 0.75 * teachers.sets[0].gather(ids).astype(np.float64) + 0.25 * teachers.sets[1].gather(ids)
    _, singular, vt = np.linalg.svd(x - x.mean(axis=0), full_matrices=False)
    basis = teachers.pca_basis().astype(np.float64)
    for j in range(5):  # the leading axes, each up to its sign
        assert abs(abs(float(basis[:, j] @ vt[j])) - 1.0) < 1e-4, j
    assert singular[0] > singular[4]
