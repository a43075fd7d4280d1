"""Every default that more than one module uses, defined once (import these names; never repeat the value).

Torch-free: the config, the CLI and the models all read these.
"""

from __future__ import annotations

#: InfoNCE temperature tau of SimCSE (Gao et al., 2021, section 3: tau = 0.05), used by every contrastive
#: objective whose paper does not state another.
TEMPERATURE = 0.05

#: Training truncation in tokens (SimCSE's unsupervised Wikipedia recipe: max_seq_len 32).
TRAIN_MAX_LENGTH = 32

#: The shortest truncation that leaves room for one real token besides [CLS] and [SEP]: below it every sentence
#: becomes the same vector (2), or the tokenizer cannot truncate at all and silently keeps the whole sentence (1).
MIN_MAX_LENGTH = 3

#: Steps in a row with exactly the same loss after which a run stops: a loss that cannot move trains nothing
#: (no in-batch negative, saturated logits, every sentence the same vector).
CONSTANT_LOSS_WINDOW = 20

#: Ceiling of the inference truncation when a folder sets none (BERT's position limit; SimCSE's evaluation
#: does not truncate short of it).
INFERENCE_MAX_LENGTH_CAP = 512

#: Pooler of a new model (SimCSE: [CLS] with the MLP head).
POOLER = "cls"

#: Sentences per forward pass at inference (encode, evaluation, index, mining, search): the CLI's and the
#: evaluation's default since the first release, with which every results page was measured (batches are
#: sorted by length, so padding and the scores depend a little on it). The service's micro-batch is its own
#: measured setting (serve/limits.py).
ENCODE_BATCH_SIZE = 128

#: Environment variable naming the data folder.
DATA_ENV = "SENTCL_DATA"

#: The data folder when neither --data-dir nor $SENTCL_DATA is given: ``sentcl/data`` in the user's cache folder
#: ($XDG_CACHE_HOME, else ~/.cache), the same whatever the working folder.
DATA_DIR_DEFAULT = ("sentcl", "data")

#: How ``model.output_dim``'s Dense layer starts (the config's choices, read by modeling/build.py): PCA of the
#: start model's vectors (the first, the default) or nn.Linear's random initialisation.
OUTPUT_DIM_INITS = ("pca", "random")

#: Training sentences the PCA start of ``model.output_dim`` is fitted on (the first ones of the corpus).
OUTPUT_DIM_PCA_SENTENCES = 5000

#: Sub-folder of the cache folder ($SENTCL_CACHE, else ~/.cache/sentcl: ``sentcl.data.streaming.cache_root``)
#: that holds cached teacher vectors when ``model.teacher_cache`` is null: ``~/.cache/sentcl/teachers``.
TEACHER_CACHE_SUBDIR = "teachers"

#: How a teacher's vectors meet a student of another width (``model.teacher_mapping``): a learned linear
#: projection of the student's vector into the teacher's space, or the teacher's vectors reduced by PCA.
TEACHER_MAPPINGS = ("projection", "pca")
