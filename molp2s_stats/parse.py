r"""Parse raw MolP2SBench model responses into candidate labels.

A response names a candidate either by an explicit label (``Answer: B``,
``(B)``, ``**B**``, ``\boxed{B}``, a response that is just ``B``) or by a
SMILES string that RDKit canonicalises to one candidate's fragment or
completed molecule. Text in backticks is always read as
SMILES, never as a label. Anything else is invalid and carries one of
`INVALID_REASONS`.

A line that starts with ``Answer:`` (or ``Final answer:``) decides on its own where
it names a candidate, the last such line winning over anything above it, so the
letters a justification mentions do not make the answer ambiguous. Otherwise
evidence is gathered in three tiers, highest first: ``final answer``
markers, other answer markers (``Answer:``, ``answer is``), and structured
mentions anywhere in the text. The first non-empty tier decides: its valid
items must all name the same candidate, otherwise the answer is
``ambiguous``; invalid items (an unknown label, an unparsable SMILES) only
decide when no item is valid.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from rdkit import Chem, RDLogger

RDLogger.DisableLog("rdApp.*")  # malformed SMILES in responses are expected

__all__ = ["INVALID_REASONS", "CandidateIndex", "ParsedAnswer", "parse_answer"]

#: Why an answer is invalid. The parser gives the first five: no candidate named
#: (``no_answer``), two named where one must decide (``ambiguous``), a SMILES that
#: does not parse (``bad_smiles``) or matches no candidate (``not_a_candidate``), and a
#: reply that declines to choose ("I cannot determine…", ``refusal``). The loader adds
#: ``request_failed`` for a batch or harness request that returned no answer, and
#: ``truncated`` for an answer the API or harness says stopped at its token limit (or
#: another limit) before the model finished, whatever the cut text names.
INVALID_REASONS = ("no_answer", "ambiguous", "bad_smiles", "not_a_candidate", "refusal", "request_failed",
                   "truncated")

_MAX_SMILES_LEN = 1000  # longer tokens are not fragments; spare RDKit the work


@dataclass(frozen=True)
class ParsedAnswer:
    """Outcome of parsing one response.

    Attributes
    ----------
    choice : str or None
        The chosen candidate label, or None when the response is invalid.
    reason : str or None
        None when valid; otherwise one of `INVALID_REASONS`.
    """

    choice: str | None
    reason: str | None


@lru_cache(maxsize=65536)
def _canonical(smiles: str) -> tuple[str, str] | None:
    """Return (canonical, stereo-free canonical) SMILES, or None if invalid."""
    if not smiles or len(smiles) > _MAX_SMILES_LEN:
        return None
    try:
        mol = Chem.MolFromSmiles(smiles)
    except Exception:  # RDKit raises on a few pathological inputs
        return None
    if mol is None or mol.GetNumAtoms() == 0:
        return None
    for atom in mol.GetAtoms():
        # `*`, `[*]`, `[1*]` and `[*:1]` all spell the same attachment point.
        if atom.GetAtomicNum() == 0:
            atom.SetIsotope(0)
            atom.SetAtomMapNum(0)
    exact = Chem.MolToSmiles(mol)
    Chem.RemoveStereochemistry(mol)
    return exact, Chem.MolToSmiles(mol)


# An item of evidence: the labels it is consistent with, or an invalid reason.
_Evidence = frozenset | str


class CandidateIndex:
    """Canonical forms of one family's candidates, built once and reused.

    Parameters
    ----------
    candidates : Mapping[str, tuple[str, str]]
        Label -> (fragment SMILES with one attachment point, completed
        molecule SMILES). Empty strings are skipped.

    Raises
    ------
    ValueError
        If a candidate SMILES cannot be parsed by RDKit.
    """

    def __init__(self, candidates: Mapping[str, tuple[str, str]]):
        self.labels: tuple[str, ...] = tuple(candidates)
        self._by_upper = {label.upper(): label for label in self.labels}
        self._exact: dict[str, frozenset[str]] = {}
        self._flat: dict[str, frozenset[str]] = {}
        for label, pair in candidates.items():
            for smiles in filter(None, pair):
                if (canon := _canonical(smiles)) is None:
                    raise ValueError(f"candidate {label!r}: invalid SMILES {smiles!r}")
                for table, key in ((self._exact, canon[0]), (self._flat, canon[1])):
                    table[key] = table.get(key, frozenset()) | {label}

    def _smiles(self, smiles: str) -> _Evidence:
        canon = _canonical(smiles)
        if canon is None:
            return "bad_smiles"
        # Exact first, so stereo-distinct candidates stay distinguishable.
        hit = self._exact.get(canon[0]) or self._flat.get(canon[1])
        return hit or "not_a_candidate"

    def _label(self, letter: str) -> _Evidence:
        label = self._by_upper.get(letter.upper())
        return frozenset((label,)) if label is not None else "not_a_candidate"

    def match_smiles(self, smiles: str) -> ParsedAnswer:
        """Map a SMILES string to the candidate whose fragment or molecule it is.

        Parameters
        ----------
        smiles : str
            Any SMILES; attachment-point spelling and stereo may differ.

        Returns
        -------
        ParsedAnswer
            The label, or ``bad_smiles``, ``not_a_candidate`` or ``ambiguous``.
        """
        return _resolve([self._smiles(smiles.strip())])


def _resolve(evidence: list[_Evidence]) -> ParsedAnswer:
    valid = [e for e in evidence if isinstance(e, frozenset)]
    if valid:
        common = frozenset.intersection(*valid)
        if len(common) == 1:
            return ParsedAnswer(next(iter(common)), None)
        return ParsedAnswer(None, "ambiguous")
    return ParsedAnswer(None, evidence[0] if evidence else "no_answer")


_PH_OPEN, _PH_CLOSE = "\ue000", "\ue001"  # private-use chars mark code spans
_CODE = re.compile(r"```(.*?)(?:```|\Z)|``(.+?)``|`([^`\n]+)`", re.S)
_LANG_TAG = re.compile(r"[a-z]+\n")  # ```smiles\n ... ``` info string
_SMILES_CHARS = re.compile(r"[A-Za-z0-9@+\-\[\]()=#$:/\\.%*]+")
_TRAILING = ".,;:!?\"'"
_ATOMISH = re.compile(r"[A-Za-z*]")
_SMILES_SPECIAL = re.compile(r"[*\[\]()=#@/\\%0-9]")
_ORGANIC = re.compile(r"(?:Cl|Br|[BCNOSPFI]|[bcnops]){2,}")

_MARKER = re.compile(
    r"\b(?:(?P<final>final\s+(?:answer|choice))|answer|correct\s+(?:option|choice|candidate))\b"
    r"(?:\s|[:=$\-\u2013\u2014]|\*\*+|__|\b(?:is|was|would\s+be|should\s+be|will\s+be)\b)*",
    re.I,
)
_TARGET = re.compile(
    r"(?P<prefix>(?:option|candidate|choice)\s*[:#]?\s*)?"
    r"(?:[(\[]?\s*\ue000(?P<idx>\d+)\ue001"
    r"|(?P<open>\\boxed\{\s*(?:\\text(?:bf)?\{|\\mathrm\{)?|\*\*|__|[(\[{])?\s*"
    r"(?P<lab>[A-Z])\s*(?P<close>\}\}?|\*\*|__|[)\]}])?"
    r"(?=$|\s|[.,;:!?](?:\s|$)|[*_\"'$]))",
    re.I,
)
_TOKEN = re.compile(r"[^\s`\ue000\ue001]+")
_EOL = re.compile(r"[ \t.,;:!?*_\"')\]]*(?:\n|$)")  # lower-case bare labels end the line
_PRONOUN = re.compile(r"\s+[a-z]|'[a-z]")  # "Answer: I think ..."
# Alternatives and glosses belong to the marker only on its own line.
_OR = re.compile(r"[ \t]*(?:\bor\b|/)[ \t]*", re.I)
_GLOSS = re.compile(r"[ \t,;:=\-\u2013\u2014]*(?:(?:i\.e\.|smiles)[ \t,;:=]*)?", re.I)

_NOT_SMILES_NEXT = r"(?![\w(\[=#@+\-*\\/%])"  # keeps `CC(C)C` from reading as (C)
_STRUCTURED = (
    re.compile(r"\\boxed\{\s*(?:\\text(?:bf)?\{|\\mathrm\{)?\s*([A-Za-z])\s*\}"),
    re.compile(r"(?:\*\*|__)\s*[(\[]?\s*([A-Z])\s*[)\]]?\s*[.:]?\s*(?:\*\*|__)"),
    re.compile(r"(?<![\w\])=#@+\-*\\/%])[(\[]\s*([A-Z])\s*[)\]]" + _NOT_SMILES_NEXT),
    re.compile(r"(?i:\b(?:option|candidate|choice))\s*[:#]?\s*[(\[]?\s*([A-Z])" + _NOT_SMILES_NEXT),
    re.compile(r"(?<!\S)([A-Z])\)" + _NOT_SMILES_NEXT),
    re.compile(r"^(?:[ \t>#_-]|\*\*|\*[ \t])*[(\[]?([A-Z])[)\]]?(?:[ \t.:!_]|\*\*)*$", re.M),
)
_WHOLE_LABEL = re.compile(r"(?:\*\*|__)?\s*[(\[{]?\s*([A-Za-z])\s*[)\]}]?\s*(?:\*\*|__)?\s*[.!]?")


# An answer line: "Answer: B", "**Final answer:** B", "> Answer - B".
_ANSWER_LINE = re.compile(r"^[ \t>#*_-]*(?:final\s+)?answer\b[^\n]*$", re.I | re.M)
# A reply that declines to choose. Only consulted when no candidate is named.
_REFUSAL = re.compile(
    r"\bI\s*(?:cannot|can't|can\s+not|am\s+unable\s+to|'m\s+unable\s+to|am\s+not\s+able\s+to|"
    r"'m\s+not\s+able\s+to|will\s+not|won't)\s+(?:reliably\s+|confidently\s+)?"
    r"(?:determine|decide|choose|pick|select|identify|tell|say|answer|distinguish|help)\b"
    r"|\bI\s+(?:must|have\s+to)\s+decline\b"
    r"|\b(?:not\s+possible|impossible)\s+to\s+(?:determine|tell|say|choose|decide)\b"
    r"|\bcannot\s+be\s+(?:determined|decided)\b"
    r"|\binsufficient\s+information\s+to\s+(?:determine|decide|choose|tell)\b",
    re.I,
)


def _looks_like_smiles(token: str) -> bool:
    if not _SMILES_CHARS.fullmatch(token) or not _ATOMISH.search(token):
        return False
    return bool(_SMILES_SPECIAL.search(token) or _ORGANIC.fullmatch(token))


def _strip_token(token: str) -> str:
    """Drop bold marks and sentence punctuation around a bare token."""
    token = token.rstrip(_TRAILING)
    for mark in ("**", "__"):
        token = token.removeprefix(mark).removesuffix(mark)
    return token.rstrip(_TRAILING)


def _mask_code(text: str) -> tuple[str, list[list[str]]]:
    """Replace code spans by placeholders; return masked text and span tokens."""
    spans: list[list[str]] = []

    def repl(m: re.Match[str]) -> str:
        body = next(g for g in m.groups() if g is not None)
        tag = _LANG_TAG.match(body) if m.group(1) is not None else None
        if tag and body[tag.end():].strip():
            body = body[tag.end():]
        tokens = body.split()
        if len(tokens) > 1:  # prose in a code span: keep only SMILES-like words
            tokens = [t for t in tokens if _looks_like_smiles(t)] or [body.strip()]
        spans.append(tokens)  # an empty span names nothing
        return f" {_PH_OPEN}{len(spans) - 1}{_PH_CLOSE} "

    return _CODE.sub(repl, text), spans


def _target(masked, pos, spans, index, *, no_token=False, strong_only=False):
    """Read what a marker points at: (evidence or None, end position)."""
    m = _TARGET.match(masked, pos)
    if m and m.group("idx") is not None:
        return [index._smiles(t) for t in spans[int(m.group("idx"))]], m.end()
    if m:
        lab = m.group("lab")
        # A lone "(" is not a wrapper: "Answer: B (A is too long)" names only B.
        opener = m.group("open") or "("
        strong = bool(m.group("prefix") or m.group("close") or opener[0] in "*_\\")
        weak_ok = not strong_only and (
            (lab.isupper() and not (lab == "I" and _PRONOUN.match(masked, m.end())))
            or (lab.islower() and _EOL.match(masked, m.end()))
        )
        if strong or weak_ok:
            return [index._label(lab)], m.end()
    if not (no_token or strong_only) and (t := _TOKEN.match(masked, pos)):
        if _looks_like_smiles(token := _strip_token(t.group())):
            return [index._smiles(token)], t.end()
    return None, pos


def _marker_evidence(masked, spans, index) -> tuple[list[_Evidence], list[_Evidence]]:
    """Evidence named by ``final answer`` markers and by other answer markers."""
    final: list[_Evidence] = []
    plain: list[_Evidence] = []
    for m in _MARKER.finditer(masked):
        found, end = _target(masked, m.end(), spans, index)
        if found is None:
            continue
        # "B or C" names two; a gloss (`SMILES` after a label, (B) after a SMILES) must agree.
        if alt := _OR.match(masked, end):
            found += _target(masked, alt.end(), spans, index, no_token=True)[0] or []
        gloss = _GLOSS.match(masked, end).end()
        found += _target(masked, gloss, spans, index, strong_only=True)[0] or []
        (final if m.group("final") else plain).extend(found)
    return final, plain


_FINAL = re.compile(r"\bfinal\s+(?:answer|choice)\b", re.I)


def _last_answer_line(masked: str, spans, candidates: CandidateIndex) -> ParsedAnswer | None:
    """The verdict of the last ``Answer:`` line that names a candidate, or None.

    A line that names no valid candidate (``Answer: (see above)``) does not decide, nor
    does any line above a later "final answer", which the tiered reading then weighs.
    A line whose answer is on the next line (``Answer:`` then ``B``) is read across it.
    """
    for line in reversed(list(_ANSWER_LINE.finditer(masked))):
        if _FINAL.search(masked, line.end()):
            return None
        final, plain = _marker_evidence(line.group(), spans, candidates)
        if not (final or plain):
            following = masked.find("\n", line.end() + 1)
            final, plain = _marker_evidence(masked[line.start():following if following >= 0 else None],
                                            spans, candidates)
        evidence = final or plain
        if any(isinstance(e, frozenset) for e in evidence):
            return _resolve(evidence)
    return None


def parse_answer(text: str | None, candidates: CandidateIndex) -> ParsedAnswer:
    r"""Parse one raw model response into a candidate label.

    Parameters
    ----------
    text : str or None
        The raw response.
    candidates : CandidateIndex
        The family's candidates.

    Returns
    -------
    ParsedAnswer
        ``(label, None)`` when the response names exactly one candidate,
        else ``(None, reason)`` with ``reason`` in `INVALID_REASONS`.

    Examples
    --------
    >>> idx = CandidateIndex({"A": ("[*]CCC", "CCCc1ccccc1"),
    ...                       "B": ("[*]C(C)C", "CC(C)c1ccccc1")})
    >>> parse_answer("(A) is too long. Final answer: **B**", idx)
    ParsedAnswer(choice='B', reason=None)
    >>> parse_answer("Answer: `[1*]CCC`", idx)
    ParsedAnswer(choice='A', reason=None)
    >>> parse_answer("A fragment with three carbons fits.", idx)
    ParsedAnswer(choice=None, reason='no_answer')
    >>> parse_answer("A is too short and B too branched... on balance B.\nAnswer: A", idx)
    ParsedAnswer(choice='A', reason=None)
    >>> parse_answer("I cannot determine this from the data given.", idx)
    ParsedAnswer(choice=None, reason='refusal')
    """
    if not text or not text.strip():
        return ParsedAnswer(None, "no_answer")
    text = text.replace(_PH_OPEN, "").replace(_PH_CLOSE, "")  # no forged placeholders
    masked, spans = _mask_code(text)
    stripped = masked.strip()
    if whole := _WHOLE_LABEL.fullmatch(stripped):
        return _resolve([candidates._label(whole.group(1))])

    if (decided := _last_answer_line(masked, spans, candidates)) is not None:
        return decided

    final, plain = _marker_evidence(masked, spans, candidates)
    if final or plain:
        return _resolve(final or plain)

    evidence: list[_Evidence] = []
    for pattern in _STRUCTURED:
        evidence.extend(candidates._label(m.group(1)) for m in pattern.finditer(masked))
    for tokens in spans:
        evidence.extend(candidates._smiles(t) for t in tokens)
    token = _strip_token(stripped)
    if not spans and _TOKEN.fullmatch(stripped) and _looks_like_smiles(token):
        evidence.append(candidates._smiles(token))  # a response that is only a SMILES
    result = _resolve(evidence)
    if result.reason == "no_answer" and _REFUSAL.search(masked):
        return ParsedAnswer(None, "refusal")
    return result
