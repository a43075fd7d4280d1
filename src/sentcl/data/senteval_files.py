"""The file names of SentEval's transfer tasks under the data folder's ``senteval/`` (SentEval's own layout):
read by the evaluation's readers (``sentcl.evaluation.senteval_readers``) and by the offline English corpus
(``sentcl.data.offline_english``)."""

from __future__ import annotations

# task -> (folder, file labelled 1, file labelled 0); SentEval's BinaryClassifierEval(pos, neg) order.
BINARY_FILES: dict[str, tuple[str, str, str]] = {
    "MR": ("MR", "rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("CR", "custrev.pos", "custrev.neg"),
    "SUBJ": ("SUBJ", "subj.objective", "subj.subjective"),
    "MPQA": ("MPQA", "mpqa.pos", "mpqa.neg"),
}
SST2_FILES = {"train": "sentiment-train", "dev": "sentiment-dev", "test": "sentiment-test"}
TREC_FILES = {"train": "train_5500.label", "test": "TREC_10.label"}
MRPC_FILES = {"train": "msr_paraphrase_train.txt", "test": "msr_paraphrase_test.txt"}
