"""SNCSE's soft negatives: the negation of a sentence, by our own deterministic English rules, or from a file.

Rules (the first that applies, on the first clause-level verb found left to right):

1. A negated sentence loses its first negation: "isn't" -> "is", "can't" -> "can", "won't" -> "will",
   "is not" -> "is", "does not run" -> "does run" (emphatic, but grammatical).
2. "no" / "nobody" / "nothing" / "none" / "never" / "nowhere" / "neither" are swapped for positive forms
   ("some", "somebody", "something", "some", "always", "somewhere", "either").
3. An auxiliary or copula (is, are, was, were, am, can, could, will, would, shall, should, may, might, must,
   has, have, had, does, do, did) gets "not" after it; possessive has/have/had (before a determiner or a
   number) becomes does/do/did not have.
4. Otherwise the first verb-looking word after a subject (a word ending in -s/-ed or in a small list of
   irregular past forms, or the word after a pronoun; never a word after a determiner, preposition,
   conjunction or number) gets "does not" / "did not" / "do not" before its base form.
5. Otherwise: "it is not true that " + the sentence (lower-cased first letter).

The rules are heuristic (no parser); rule 5 makes every sentence negatable. A user-written TSV file
(sentence<TAB>negation, one pair a line) replaces them: ``read_negations``.
"""

from __future__ import annotations

import re
from pathlib import Path

from sentcl.data.readers import DataFormatError, iter_text_lines, require_file

AUXILIARIES = frozenset(
    "is are was were am can could will would shall should may might must has have had does do did".split()
)
# contracted negations and their positive forms
NEGATED = {
    "isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were", "can't": "can", "cannot": "can",
    "couldn't": "could", "won't": "will", "wouldn't": "would", "shan't": "shall", "shouldn't": "should",
    "mightn't": "might", "mustn't": "must", "hasn't": "has", "haven't": "have", "hadn't": "had",
    "doesn't": "does", "don't": "do", "didn't": "did", "ain't": "is",
}  # fmt: skip
NEGATIVE_WORDS = {
    "never": "always", "no": "some", "nobody": "somebody", "nothing": "something", "none": "some",
    "nowhere": "somewhere", "neither": "either",
}  # fmt: skip
PRONOUNS = frozenset("i you we they he she it this that there who".split())
THIRD_SINGULAR = frozenset("he she it this that who".split())
# irregular past forms -> base forms (the common ones); regular -ed pasts are stripped by rule
IRREGULAR_PAST = {
    "went": "go", "saw": "see", "took": "take", "came": "come", "made": "make", "got": "get", "gave": "give",
    "found": "find", "knew": "know", "thought": "think", "told": "tell", "became": "become", "left": "leave",
    "felt": "feel", "brought": "bring", "began": "begin", "kept": "keep", "held": "hold", "wrote": "write",
    "stood": "stand", "heard": "hear", "meant": "mean", "met": "meet", "ran": "run", "paid": "pay",
    "sat": "sit", "spoke": "speak", "led": "lead", "grew": "grow", "lost": "lose", "fell": "fall",
    "sent": "send", "built": "build", "won": "win", "ate": "eat", "drove": "drive", "rode": "ride",
    "sang": "sing", "wore": "wear", "chose": "choose", "bought": "buy", "taught": "teach", "said": "say",
}  # fmt: skip
DETERMINERS = frozenset("a an the this that these those his her its their our my your some many".split())
# a word after one of these is a noun phrase's, not the verb ("with glasses", "of the years")
PREPOSITIONS = frozenset(
    "of in on at with by for from to into over under near about after before and or but nor than as".split()
)
# possessive have: "has a car" -> "does not have a car" (not "has not a car")
HAVE = {"has": "does", "have": "do", "had": "did"}
# -s words that are not third-person verbs after a subject noun
NOT_VERBS = frozenset("is was has does his its this us as thus always perhaps news series species".split())
WORD = re.compile(r"[A-Za-z0-9']+")


def _keep_case(original: str, word: str) -> str:
    return word[:1].upper() + word[1:] if original[:1].isupper() else word


def _base_form(verb: str) -> str | None:
    """Base form of a 3rd-person-singular or past verb, None when ``verb`` does not look like one."""
    lower = verb.lower()
    if lower in IRREGULAR_PAST:
        return IRREGULAR_PAST[lower]
    if lower.endswith("ied") and len(lower) > 4:
        return lower[:-3] + "y"
    if lower.endswith("ed") and len(lower) > 3:
        stem = lower[:-2]
        if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":  # stopped -> stop
            return stem[:-1]
        return stem + "e" if stem.endswith(("at", "iz", "iv", "ur", "os", "ak", "ov")) else stem
    if lower.endswith("ies") and len(lower) > 4:
        return lower[:-3] + "y"
    if lower.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return lower[:-2]
    if lower.endswith("s") and not lower.endswith("ss") and len(lower) > 2 and lower not in NOT_VERBS:
        return lower[:-1]
    return None


def negate(sentence: str) -> str:
    """The negation of an English sentence by the rules of the module docstring (deterministic)."""
    tokens = [(m.start(), m.end(), m.group()) for m in WORD.finditer(sentence)]
    if not tokens:
        return sentence

    def replace(i: int, text: str) -> str:
        start, end, _ = tokens[i]
        return sentence[:start] + text + sentence[end:]

    for i, (_, end, word) in enumerate(tokens):  # 1-2: remove an existing negation
        lower = word.lower()
        if lower in NEGATED:
            return replace(i, _keep_case(word, NEGATED[lower]))
        if lower == "not" and i > 0:
            return sentence[: tokens[i - 1][1]] + sentence[end:]  # "is not" -> "is"; "do not go" -> "do go"
        if lower in NEGATIVE_WORDS:
            return replace(i, _keep_case(word, NEGATIVE_WORDS[lower]))
    for i, (start, end, word) in enumerate(tokens):  # 3: auxiliary or copula + not
        lower = word.lower()
        if lower in AUXILIARIES:
            following = tokens[i + 1][2].lower() if i + 1 < len(tokens) else ""
            if lower in HAVE and (following in DETERMINERS or following.isdigit()):  # possessive have
                return sentence[:start] + _keep_case(word, f"{HAVE[lower]} not have") + sentence[end:]
            return sentence[:end] + " not" + sentence[end:]
    for i, (start, end, word) in enumerate(tokens):  # 4: a main verb after its subject
        if i == 0:
            continue
        prev = tokens[i - 1][2].lower()
        if prev in DETERMINERS or prev in PREPOSITIONS or prev.isdigit() or word.isdigit():
            continue
        base = _base_form(word)
        lower = word.lower()
        if base is not None:
            past = lower in IRREGULAR_PAST or lower.endswith("ed")
            aux = "did" if past else "does"
            return sentence[:start] + f"{aux} not {base}" + sentence[end:]
        if prev in PRONOUNS and prev not in THIRD_SINGULAR and lower.isalpha():
            return sentence[:start] + f"do not {lower}" + sentence[end:]
    first = sentence[0].lower() + sentence[1:] if not sentence[:2].isupper() else sentence
    return "it is not true that " + first  # 5


def read_negations(path: str | Path) -> dict[str, str]:
    """A user's TSV of ``sentence<TAB>negation`` lines (blank lines skipped); a bad line is an error naming it."""
    path = Path(path)
    require_file(path, "negation file")
    pairs: dict[str, str] = {}
    for lineno, line in iter_text_lines(path):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2 or not fields[0].strip() or not fields[1].strip():
            raise DataFormatError(
                f"{path}:{lineno}: expected 'sentence<TAB>negation' (two non-empty fields), got "
                f"{len(fields)} field(s): {line[:60]!r}"
            )
        sentence, negation = fields
        if sentence in pairs and pairs[sentence] != negation:
            raise DataFormatError(f"{path}:{lineno}: {sentence[:60]!r} already has another negation")
        pairs[sentence] = negation
    if not pairs:
        raise DataFormatError(f"{path}: no 'sentence<TAB>negation' lines")
    return pairs
