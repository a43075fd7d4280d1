"""The method records: one per registered method, torch-free, in one registry (``METHODS``).

A record says what the config needs to know about a method without importing its code: its options class
(``sentcl.config.method_options``), the reader of its training file, and its paper (authors, title, venue and year), a
citation, and the paper's headline number with what it measures. The builder lives in ``sentcl.methods.<name>``
and is registered there (``sentcl.methods.register_method``); the training side imports it, never the config.
The model card and the README's table read these records.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from sentcl.config.method_options import (
    ArcCSEOptions,
    CoSENTOptions,
    CutoffTripletOptions,
    DiffCSEOptions,
    DistillKLOptions,
    DistillMSEOptions,
    ESimCSEOptions,
    MixCSEOptions,
    NextSentenceOptions,
    PromptBERTOptions,
    QuickThoughtsOptions,
    RankCSEOptions,
    SNCSEOptions,
    SupPairsOptions,
    SupSimCSEOptions,
    UnsupSimCSEOptions,
)
from sentcl.config.objective import ObjectiveConfig
from sentcl.config.typed import ConfigError, describe_fields
from sentcl.files.read import cut, preview
from sentcl.registry import Registry


@dataclass(frozen=True)
class Paper:
    """Where a method comes from. ``headline``: the paper's own number for the method (None where the paper
    reports none sentcl can compare with); ``headline_what`` says what it measures, or why there is none."""

    authors: str
    title: str
    venue: str
    citation: str
    headline: float | None
    headline_what: str

    def line(self) -> str:
        """``Gao, Yao and Chen: SimCSE: ... (EMNLP 2021)``"""
        return f"{self.authors}: {self.title} ({self.venue})"


@dataclass(frozen=True)
class MethodRecord:
    """One method: ``objective.name``, its options class, its training file's reader, its paper."""

    name: str
    options: type[ObjectiveConfig]
    reader: str
    paper: Paper
    #: one line for model cards and help texts
    summary: str


METHODS: Registry[MethodRecord] = Registry("method")

_SIMCSE = dict(
    authors="Tianyu Gao, Xingcheng Yao and Danqi Chen",
    title="SimCSE: Simple Contrastive Learning of Sentence Embeddings",
    venue="EMNLP 2021",
    citation="@inproceedings{gao2021simcse, title={SimCSE: Simple Contrastive Learning of Sentence Embeddings}, "
    "author={Gao, Tianyu and Yao, Xingcheng and Chen, Danqi}, booktitle={EMNLP}, year={2021}}",
)
_PROMPTBERT = "Jiang et al.: PromptBERT: Improving BERT Sentence Embeddings with Prompts. EMNLP 2022."
_CUTOFF_NOTE = (
    "Token cutoff views with a triplet term: an unpublished research note (no published paper to cite); "
    "its Tables 1-2 give the numbers."
)
_STS7 = "7-task STS average (STS12-16, STS-B, SICK-R; Spearman x 100), BERT-base"

_RECORDS = (
    MethodRecord(
        "unsup_simcse", UnsupSimCSEOptions, "lines",
        Paper(**_SIMCSE, headline=76.25, headline_what=f"{_STS7}, unsupervised (Table 5)"),
        "SimCSE (Gao et al., 2021), unsupervised: dropout noise as the positive",
    ),
    MethodRecord(
        "sup_simcse", SupSimCSEOptions, "nli_csv",
        Paper(**_SIMCSE, headline=81.57, headline_what=f"{_STS7}, supervised on SNLI+MNLI (Table 5)"),
        "SimCSE (Gao et al., 2021), supervised: NLI entailment positives, contradiction hard negatives",
    ),
    MethodRecord(
        "sup_pairs", SupPairsOptions, "pairs",
        Paper(**_SIMCSE, headline=84.2,
              headline_what="STS-B dev (Spearman x 100), BERT-base, entailment pairs only (Table 4)"),
        "SimCSE (Gao et al., 2021), supervised pairs without hard negatives (Table 4 / Table 7)",
    ),
    MethodRecord(
        "cutoff_triplet", CutoffTripletOptions, "lines",
        Paper("an unpublished research note", "Token cutoff views with a triplet term",
              "unpublished", _CUTOFF_NOTE, 76.91,
              f"{_STS7}, [UNK] cutoff with the LeakyReLU strong-view head (the note's Tables 1-2)"),
        "token cutoff views (weak s*, strong s**) with a triplet term (an unpublished research note)",
    ),
    MethodRecord(
        "next_sentence", NextSentenceOptions, "next_sentence",
        Paper(**_SIMCSE, headline=67.1,
              headline_what="STS-B dev (Spearman x 100), BERT-base, next-sentence positives, one encoder (Table 2)"),
        "SimCSE Table 2: the next sentence (or one of the next three) as the positive",
    ),
    MethodRecord(
        "quick_thoughts", QuickThoughtsOptions, "ordered_lines",
        Paper("Lajanugen Logeswaran and Honglak Lee",
              "An Efficient Framework for Learning Sentence Representations", "ICLR 2018",
              "@inproceedings{logeswaran2018efficient, title={An Efficient Framework for Learning Sentence "
              "Representations}, author={Logeswaran, Lajanugen and Lee, Honglak}, booktitle={ICLR}, year={2018}}",
              None, "none: the paper reports transfer-task accuracies, no STS average to compare with"),
        "Quick-Thoughts (Logeswaran & Lee, 2018): classify the context sentences",
    ),
    MethodRecord(
        "cosent", CoSENTOptions, "scored_pairs",
        Paper("Jianlin Su", "CoSENT: a more efficient sentence vector scheme than Sentence-BERT",
              "blog post (kexue.fm), 2022",
              "Su, Jianlin. CoSENT (1): a more efficient sentence vector scheme than Sentence-BERT. "
              "Blog post, kexue.fm, 2022.",
              None, "none: the post reports per-dataset Chinese STS results, no 7-task STS average"),
        "CoSENT (Su, 2022): a ranking loss on the cosines of scored pairs",
    ),
    MethodRecord(
        "esimcse", ESimCSEOptions, "lines",
        Paper("Xing Wu, Chaochen Gao, Liangjun Zang, Jizhong Han, Zhongyuan Wang and Songlin Hu",
              "ESimCSE: Enhanced Sample Building Method for Contrastive Learning of Unsupervised Sentence "
              "Embedding", "COLING 2022",
              "@inproceedings{wu2022esimcse, title={ESimCSE: Enhanced Sample Building Method for Contrastive "
              "Learning of Unsupervised Sentence Embedding}, author={Wu, Xing and Gao, Chaochen and Zang, "
              "Liangjun and Han, Jizhong and Wang, Zhongyuan and Hu, Songlin}, booktitle={COLING}, year={2022}}",
              78.27, f"{_STS7}, unsupervised"),
        "ESimCSE (Wu et al., 2022): word repetition positives, a momentum-encoded negative queue",
    ),
    MethodRecord(
        "mixcse", MixCSEOptions, "lines",
        Paper("Yanzhao Zhang, Richong Zhang, Samuel Mensah, Xudong Liu and Yongyi Mao",
              "Unsupervised Sentence Representation via Contrastive Learning with Mixing Negatives",
              "AAAI 2022",
              "@inproceedings{zhang2022mixcse, title={Unsupervised Sentence Representation via Contrastive "
              "Learning with Mixing Negatives}, author={Zhang, Yanzhao and Zhang, Richong and Mensah, Samuel and "
              "Liu, Xudong and Mao, Yongyi}, booktitle={AAAI}, year={2022}}",
              77.66, f"{_STS7}, unsupervised (77.66 +- 0.61)"),
        "MixCSE (Zhang et al., 2022): detached mixed hard negatives added to SimCSE",
    ),
    MethodRecord(
        "arccse", ArcCSEOptions, "lines",
        Paper("Yuhao Zhang, Hongji Zhu, Yongliang Wang, Nan Xu, Xiaobo Li and Binqiang Zhao",
              "A Contrastive Framework for Learning Sentence Representations from Pairwise and Triple-wise "
              "Perspective in Angular Space", "ACL 2022",
              "@inproceedings{zhang2022arccse, title={A Contrastive Framework for Learning Sentence "
              "Representations from Pairwise and Triple-wise Perspective in Angular Space}, author={Zhang, "
              "Yuhao and others}, booktitle={ACL}, year={2022}}",
              78.11, f"{_STS7}, unsupervised"),
        "ArcCSE (Zhang et al., 2022): an angular margin on the positive + a triplet over masked views",
    ),
    MethodRecord(
        "promptbert", PromptBERTOptions, "lines",
        Paper("Ting Jiang, Jian Jiao, Shaohan Huang, Zihan Zhang, Deqing Wang, Fuzhen Zhuang, Furu Wei, "
              "Haizhen Huang, Denvy Deng and Qi Zhang",
              "PromptBERT: Improving BERT Sentence Embeddings with Prompts", "EMNLP 2022", _PROMPTBERT,
              78.54, f"{_STS7}, unsupervised (78.54 +- 0.15, 5 seeds)"),
        "PromptBERT (Jiang et al., 2022): the [MASK] state of a template, two templates as the positive",
    ),
    MethodRecord(
        "sncse", SNCSEOptions, "lines",
        Paper("Hao Wang, Yangguang Li, Zhen Huang, Yong Dou, Lingpeng Kong and Jing Shao",
              "SNCSE: Contrastive Learning for Unsupervised Sentence Embedding with Soft Negative Samples",
              "arXiv 2201.05979, 2022",
              "Wang et al.: SNCSE: Contrastive Learning for Unsupervised Sentence Embedding with Soft Negative "
              "Samples. arXiv:2201.05979, 2022.",
              78.97, f"{_STS7}, unsupervised"),
        "SNCSE (Wang et al., 2022): PromptBERT's [MASK] state + the negation as a soft negative (BML)",
    ),
    MethodRecord(
        "distill_mse", DistillMSEOptions, "lines",
        Paper("Nils Reimers and Iryna Gurevych",
              "Making Monolingual Sentence Embeddings Multilingual using Knowledge Distillation", "EMNLP 2020",
              "@inproceedings{reimers2020multilingual, title={Making Monolingual Sentence Embeddings Multilingual "
              "using Knowledge Distillation}, author={Reimers, Nils and Gurevych, Iryna}, booktitle={EMNLP}, "
              "year={2020}}",
              None, "none: no comparable number; the paper reports multilingual and cross-lingual STS 2017 (Tables 1-2) and "
              "bitext retrieval, not the 7-task English STS average"),
        "knowledge distillation (Reimers & Gurevych, 2020): the student reproduces the teacher's vectors (MSE); "
        "parallel sentences make it multilingual",
    ),
    MethodRecord(
        "distill_kl", DistillKLOptions, "lines",
        Paper("sentcl (our reading)", "In-batch similarity-distribution distillation", "unpublished",
              "In-batch similarity-distribution distillation: our reading of the relational part of RankCSE's "
              "ListNet term (Liu et al., ACL 2023) without its contrastive term; no paper states it alone",
              None, "none: no paper reports this loss alone"),
        "the student's in-batch similarity distribution follows the teacher's (KL divergence; our reading)",
    ),
    MethodRecord(
        "rankcse", RankCSEOptions, "lines",
        Paper("Jiduan Liu, Jiahao Liu, Qifan Wang, Jingang Wang, Wei Wu, Yunsen Xian, Dongyan Zhao, Kai Chen and "
              "Rui Yan",
              "RankCSE: Unsupervised Sentence Representations Learning via Learning to Rank", "ACL 2023",
              "@inproceedings{liu2023rankcse, title={RankCSE: Unsupervised Sentence Representations Learning via "
              "Learning to Rank}, author={Liu, Jiduan and Liu, Jiahao and Wang, Qifan and Wang, Jingang and Wu, Wei "
              "and Xian, Yunsen and Zhao, Dongyan and Chen, Kai and Yan, Rui}, booktitle={ACL}, year={2023}}",
              80.36, f"{_STS7}, unsupervised, the ListMLE variant (ListNet: 80.05)"),
        "RankCSE (Liu et al., 2023): SimCSE + ranking consistency + listwise ranking distillation from teachers",
    ),
    MethodRecord(
        "diffcse", DiffCSEOptions, "lines",
        Paper("Yung-Sung Chuang, Rumen Dangovski, Hongyin Luo, Yang Zhang, Shiyu Chang, Marin Soljacic, "
              "Shang-Wen Li, Wen-tau Yih, Yoon Kim and James Glass",
              "DiffCSE: Difference-based Contrastive Learning for Sentence Embeddings", "NAACL 2022",
              "@inproceedings{chuang2022diffcse, title={DiffCSE: Difference-based Contrastive Learning for "
              "Sentence Embeddings}, author={Chuang, Yung-Sung and Dangovski, Rumen and Luo, Hongyin and Zhang, "
              "Yang and Chang, Shiyu and Soljacic, Marin and Li, Shang-Wen and Yih, Wen-tau and Kim, Yoon and "
              "Glass, James}, booktitle={NAACL}, year={2022}}",
              78.49, f"{_STS7}, unsupervised"),
        "DiffCSE (Chuang et al., 2022): SimCSE + replaced-token detection conditioned on the sentence vector",
    ),
)  # fmt: skip

for _record in _RECORDS:
    METHODS.register(_record.name)(lambda record=_record: record)


def method_record(name: object) -> MethodRecord:
    """The record of method ``name``; an unknown name (or a non-string) lists the valid ones."""
    if not isinstance(name, str) or name not in METHODS:
        raise KeyError(f"unknown method {preview(name)}; valid: {', '.join(METHODS.names())}")
    return METHODS.build(name)


def option_classes() -> dict[str, type[ObjectiveConfig]]:
    """Method name -> its options class, for every registered method."""
    return {name: METHODS.build(name).options for name in METHODS.names()}


def objective_options(name: object) -> type[ObjectiveConfig]:
    """The options class of method ``name`` (``objective.name``); an unknown name is a ConfigError."""
    try:
        return method_record(name).options
    except KeyError as err:
        raise ConfigError(f"objective.name: {err.args[0]}") from None


def unknown_objective_key(key: str, data: dict[str, Any]) -> ConfigError:
    """``objective.margin is not an option of unsup_simcse (it is an option of cutoff_triplet); its options: ...``"""
    method = data.get("name", ObjectiveConfig.name)
    base = [f.name for f in dataclasses.fields(ObjectiveConfig)]
    own = [f.name for f in dataclasses.fields(objective_options(method)) if f.name not in base]
    owners = [m for m, c in option_classes().items() if key in {f.name for f in dataclasses.fields(c)}]
    of = f" (it is an option of {', '.join(owners)})" if owners else ""
    options = ", ".join([base[0], *own, *base[1:]])
    return ConfigError(f"objective.{cut(key)} is not an option of {method}{of}; its options: {options}")


def describe_objective(prefix: str) -> list[tuple[str, str, str]]:
    """--help rows of ``objective:``: the base options, then each method's own options, marked ``[method]``."""
    rows = describe_fields(ObjectiveConfig, prefix)
    base = {f.name for f in dataclasses.fields(ObjectiveConfig)}
    for method, options in option_classes().items():
        rows.extend(
            (k, d, f"[{method}] {h}")
            for k, d, h in describe_fields(options, prefix)
            if k.rsplit(".", 1)[-1] not in base
        )
    return rows
