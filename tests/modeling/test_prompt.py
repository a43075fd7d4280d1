"""PromptBERT's pooler and template denoising against hand-written computations on a tiny random BERT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from sentcl.files.paths import ModelFolderError
from sentcl.modeling.encoder import SentenceEncoder
from sentcl.modeling.prompt import Prompt

TEMPLATES = ['the news : "[X]" is [MASK] .', 'the report of "[X]" is [MASK] .']
SENTENCES = [
    "a man plays the guitar",
    "the dog runs",
    "a small red car is riding on the old road near a river",
]


def load(tiny_bert: Path, denoise: str = "always", max_length: int = 32) -> SentenceEncoder:
    model = SentenceEncoder.from_pretrained(
        str(tiny_bert), pooler="mask", train_max_length=max_length, prompt=TEMPLATES, prompt_denoise=denoise
    )
    return model.eval()


def test_pooler_takes_exactly_the_mask_row(tiny_bert: Path) -> None:
    model = load(tiny_bert, denoise="never")
    texts = model.prompt.fill(SENTENCES, 32)
    batch = model.tokenize(texts)
    with torch.no_grad():
        z = model(**batch)
        hidden = model.backbone(**batch).last_hidden_state  # (N, L, H)
    mask_id = model.tokenizer.mask_token_id
    for r in range(len(SENTENCES)):
        ids = batch["input_ids"][r].tolist()
        rows = [i for i, t in enumerate(ids) if t == mask_id]
        assert len(rows) == 1
        torch.testing.assert_close(z[r], hidden[r, rows[0]])


def test_denoising_is_the_template_only_mask_state_at_matching_positions(tiny_bert: Path) -> None:
    model = load(tiny_bert)
    tok = model.tokenizer
    for k, template in enumerate(TEMPLATES):
        texts = model.prompt.fill(SENTENCES, 32, template=k)
        batch = model.tokenize(texts)
        with torch.no_grad():
            z = model(**batch)
        for r, sentence in enumerate(SENTENCES):
            # by hand: [CLS] prefix sentence suffix [SEP]; the template alone keeps its positions
            prefix_text, suffix_text = template.split("[X]")
            prefix = tok(prefix_text, add_special_tokens=False)["input_ids"]
            words = tok(sentence, add_special_tokens=False)["input_ids"]
            suffix = tok(suffix_text.replace("[MASK]", tok.mask_token), add_special_tokens=False)["input_ids"]
            full = [tok.cls_token_id, *prefix, *words, *suffix, tok.sep_token_id]
            assert full == [
                t
                for t, m in zip(batch["input_ids"][r].tolist(), batch["attention_mask"][r], strict=True)
                if m
            ]
            alone = [tok.cls_token_id, *prefix, *suffix, tok.sep_token_id]
            n, p = len(words), 1 + len(prefix)
            positions = list(range(p)) + list(range(p + n, len(full)))
            mask_full = full.index(tok.mask_token_id)
            mask_alone = alone.index(tok.mask_token_id)
            with torch.no_grad():
                h = model.backbone(input_ids=torch.tensor([full])).last_hidden_state[0, mask_full]
                bias = model.backbone(
                    input_ids=torch.tensor([alone]), position_ids=torch.tensor([positions])
                ).last_hidden_state[0, mask_alone]
                default_positions = model.backbone(input_ids=torch.tensor([alone])).last_hidden_state[
                    0, mask_alone
                ]
            torch.testing.assert_close(z[r], h - bias, atol=1e-5, rtol=1e-5)
            # the position ids matter: the default 0..L-1 would give another bias
            assert not torch.allclose(bias, default_positions, atol=1e-4)


def test_denoise_train_subtracts_in_training_only(tiny_bert: Path) -> None:
    always, never = load(tiny_bert, "always"), load(tiny_bert, "never")
    train_only = load(tiny_bert, "train")
    batch = train_only.tokenize(train_only.prompt.fill(SENTENCES, 32))
    with torch.no_grad():
        torch.testing.assert_close(train_only(**batch), never(**batch))  # eval mode: the raw [MASK] state
        for m in (always, train_only):
            m.backbone.config.hidden_dropout_prob = 0.0  # no dropout: the two modes comparable in training
        train_only.train()
        for module in train_only.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        torch.testing.assert_close(train_only(**batch), always(**batch), atol=1e-5, rtol=1e-5)


def test_fill_truncates_the_sentence_never_the_template(tiny_bert: Path) -> None:
    model = load(tiny_bert, max_length=20)
    long = " ".join(["guitar"] * 40)
    texts = model.prompt.fill([long, "the dog"], 20)
    assert texts[1] == 'the news : "the dog" is [MASK] .'
    assert texts[0].startswith('the news : "guitar') and texts[0].endswith('" is [MASK] .')
    ids = model.tokenizer(texts[0])["input_ids"]
    assert len(ids) <= 20 and model.tokenizer.mask_token_id in ids
    with pytest.raises(ValueError, match="no room for the sentence"):
        model.prompt.fill(["x"], 8)


def test_encode_applies_the_first_template_and_survives_save_and_load(
    tiny_bert: Path, tmp_path: Path
) -> None:
    model = load(tiny_bert)
    by_hand = model(**model.tokenize(model.prompt.fill(SENTENCES, 512))).detach()
    encoded = model.encode(SENTENCES, convert_to_numpy=False)
    torch.testing.assert_close(encoded, by_hand, atol=1e-5, rtol=1e-5)
    model.save_pretrained(tmp_path / "saved")
    meta = json.loads((tmp_path / "saved" / "sentcl.json").read_text())
    assert meta["pooler"] == "mask" and meta["prompt"] == {"templates": TEMPLATES, "denoise": "always"}
    again = SentenceEncoder.from_pretrained(str(tmp_path / "saved"))
    assert again.prompt is not None and [t.text for t in again.prompt.templates] == TEMPLATES
    torch.testing.assert_close(again.encode(SENTENCES, convert_to_numpy=False), encoded, atol=1e-5, rtol=1e-5)


def test_bad_templates_and_folders_are_errors(tiny_bert: Path, tmp_path: Path) -> None:
    tok = load(tiny_bert).tokenizer
    for bad in ("no placeholders", "[X] [X] [MASK]", "[MASK] then [X]"):
        with pytest.raises(ValueError, match="prompt template"):
            Prompt([bad], tok)
    with pytest.raises(ValueError, match="needs prompt templates"):
        SentenceEncoder(load(tiny_bert).backbone, tok, pooler="mask")
    model = load(tiny_bert)
    model.save_pretrained(tmp_path / "m")
    meta_file = tmp_path / "m" / "sentcl.json"
    meta = json.loads(meta_file.read_text())
    meta["prompt"] = {"templates": ["no sentence slot [MASK]"], "denoise": "train"}
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(ModelFolderError, match="sentcl.json.*exactly one"):
        SentenceEncoder.from_pretrained(str(tmp_path / "m"))
    meta["prompt"] = {"templates": TEMPLATES, "denoise": True}
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(
        ModelFolderError, match=r"sentcl.json: 'prompt' must be .* denoise \(train/always/never\)"
    ):
        SentenceEncoder.from_pretrained(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="mask tokens instead of 1"):
        model(**model.tokenize(["the dog runs"]))  # no template applied


def test_onnx_export_refuses_a_prompt_model(tiny_bert: Path, tmp_path: Path) -> None:
    from sentcl.interop.onnx import export_onnx

    with pytest.raises(ValueError, match="ONNX export of a prompt model"):
        export_onnx(load(tiny_bert), tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()
