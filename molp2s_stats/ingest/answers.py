r"""Parse raw MolP2SBench model responses into candidate labels.

A response names a candidate either by an explicit label (``Answer: B``,
``(B)``, ``**B**``, ``\boxed{B}``, a response that is just ``B``) or by a
SMILES string that RDKit canonicalises to one candidate's fragment or
completed molecule. Text in backticks is always read as
SMILES, never as a label. Anything else is invalid and carries one of
`INVALID_REASONS`.

Before anything is read, inline reasoning (``<think>…</think>``, ``<thinking>``,
``<reasoning>``; an unclosed block runs to the end) is dropped, ChemBench's
``[ANSWER]B[/ANSWER]`` becomes the line ``Answer: B``, and LaTeX around letters
(``$\text{A}$``, ``\( D \)``, ``\[ D \]``) is dropped outside code spans.

A line that starts with ``Answer:`` (or ``Final answer:``, ``Correct answer:``, or the
answer word of another language: ``Ответ:``, ``答案：``, ``Antwort:``, ``Réponse :``,
``Respuesta:``) decides on its own where it names a candidate, the last such line
winning over anything above it, so the letters a justification mentions do not make
the answer ambiguous. Where it puts a non-answer in the letter's place (``None of the
above``, ``N/A``, ``Insufficient information``, letters used as names: ``A = NaCN``) the
reply is invalid: ``refusal`` where it says it cannot determine or choose, else
``no_answer``; several letters (``Answer: ABC``, ``A and C``) are ``ambiguous``.
A reply cut off mid-sentence after answer lines that disagree never settled and is
``ambiguous``.

Otherwise evidence is gathered in tiers, highest first: ``final answer``
markers, other answer markers (``Answer:``, ``answer is``), an option line given
as the answer (introduced by "…is:" or bold alone at the end: ``**A) 3-cyano…**``),
a refusal or "none of the options" that nothing follows, and structured mentions
anywhere in the text, except letters that name compounds or units ("compound C",
"gas **D**", "Debye (D)", "(85 K)"). The first non-empty tier decides: its valid
items must all name the same candidate, otherwise the answer is
``ambiguous``; invalid items (an unknown label, an unparsable SMILES) only
decide when no item is valid.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from rdkit import Chem, RDLogger

RDLogger.DisableLog("rdApp.*")  # malformed SMILES in responses are expected

__all__ = ["INVALID_REASONS", "CandidateIndex", "ParsedAnswer", "parse_answer", "parse_answers"]

#: Why an answer is invalid. The parser gives the first five: no candidate named
#: (``no_answer``), two named where one must decide (``ambiguous``), a SMILES that
#: does not parse (``bad_smiles``) or matches no candidate (``not_a_candidate``), and a
#: reply that declines to choose ("I cannot determine…", ``refusal``). The loader adds
#: ``request_failed`` for a batch or harness request that returned no answer, and
#: ``truncated`` for an answer the API or harness says stopped at its token limit (or
#: another limit) before the model finished, whatever the cut text names.
INVALID_REASONS = ("no_answer", "ambiguous", "bad_smiles", "not_a_candidate", "refusal", "request_failed", "truncated")

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
        self.smiles_read = False  # set when a parse compares a SMILES with the candidates (parse_answers)

    def _smiles(self, smiles: str) -> _Evidence:
        self.smiles_read = True
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

# Reasoning that open models print inline. A block without its closing tag runs to the end
# (the model stopped while thinking); a closing tag without its opening tag means the chat
# template opened the block in the prompt, so everything before it is reasoning.
_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?(?:</\1\s*>|\Z)", re.I | re.S)
_REASONING_TAIL = re.compile(r"\A.*</(?:think|thinking|reasoning)\s*>", re.I | re.S)
# Answer tags some prompts ask for (ChemBench's [ANSWER]B[/ANSWER]); read as an answer line.
_ANSWER_TAG = re.compile(r"\[ANSWER\](.*?)\[/ANSWER\]|<answer>(.*?)</answer>", re.I | re.S)

# LaTeX around a letter (`$\text{A}$`, `\( D \)`, `\[ \text{Answer: } J \]`) is dropped so the
# letter reads as plain text. Display brackets count only where they open or close math (after
# a space or at a line's start), so a bare SMILES like C\[C@H] keeps its bond.
_TEX_WRAP = re.compile(r"\\(?:text(?:bf|rm|it|sf)?|math(?:rm|bf|it|sf)|mbox|operatorname)\s*\{([^{}\n]*)\}")
_TEX_DELIM = re.compile(r"\${1,2}|(?:(?<=\s)|^)\\[(\[]|\\[)\]](?=\s|$|[.,;:!?*)])", re.M)
_TEX_SPACE = re.compile(r"\\(?:quad|qquad|[,;:! ])")

# Answer words, English first; the others are the words models use when they slip into
# another language (Russian, Chinese, German, French, Spanish, Portuguese, Italian).
_ANSWER_WORD = r"(?:answer|ответ|答案|antwort|r[ée]ponse|respuesta|resposta|risposta)"
_FINAL_WORD = (
    r"(?:final\s+(?:answer|choice)|окончательный\s+ответ|итоговый\s+ответ|最终答案"
    r"|endg[üu]ltige\s+antwort|r[ée]ponse\s+finale|respuesta\s+final|resposta\s+final|risposta\s+finale)"
)
_MARKER = re.compile(
    rf"\b(?:(?P<final>{_FINAL_WORD})|{_ANSWER_WORD}|correct\s+(?:option|choice|candidate))\b"
    # "…fascAnswer: G": the requested `Answer:` is read even glued to the word before it
    r"|(?-i:(?<=[a-z])Answer)(?=:)",
    re.I,
)
_MARKER_TAIL = re.compile(
    r"(?:\s|[:=$\-\u2013\u2014\uff1a]|\*\*+|__|\b(?:is|was|would\s+be|should\s+be|will\s+be|ist|est|es)\b|[是为])*",
    re.I,
)
_TARGET = re.compile(
    r"(?P<prefix>(?:option|candidate|choice|вариант)\b\s*[:#]?\s*)?"
    r"(?:[(\[]?\s*\ue000(?P<idx>\d+)\ue001"
    r"|(?P<open>\\boxed\s*\{\s*(?:\\text(?:bf)?\{|\\mathrm\{)?|\*\*|__|[(\[{«“])?\s*"
    r"(?P<lab>[A-Z])\s*(?P<close>\}\}?|\*\*|__|[)\]}»”])?"
    r"(?=$|\s|[.,;:!?](?:\s|$)|[*_\"'$]))",
    re.I,
)
# "A = NaCN, B = H3O+": letters assigned one after another name the question's reagents, not options.
_ASSIGNMENTS = re.compile(r"[\s*_]*[A-Z][ \t]*=[^\n,;]*?(?:[,;]|[ \t]and\b)[ \t]*(?:and[ \t]+)?[A-Z][ \t]*=")
_TOKEN = re.compile(r"[^\s`\ue000\ue001]+")
_EOL = re.compile(r"[ \t.,;:!?*_\"')\]]*(?:\n|$)")  # lower-case bare labels end the line
# A bare capital that opens a phrase is a word, not a label: "Answer: I think …", "Final answer: A
# thorough understanding …"; before a verb or a link ("A is", "I fits", "A because") it stays a label.
_WORD_AFTER = re.compile(
    r"'[a-z]|[ \t]+(?!(?:is|was|would\s+be|should\s+be|fits|matches|corresponds|because|since|as"
    r"|and|or|but|with|for|seems|appears|remains|gives|works)\b)[a-z]"
)
# Alternatives and glosses belong to the marker only on its own line.
_OR = re.compile(r"[ \t]*(?:\bor\b|/|,|&|\band\b)[ \t]*", re.I)
_GLOSS = re.compile(r"[ \t,;:=\-\u2013\u2014]*(?:(?:i\.e\.|smiles)[ \t,;:=]*)?", re.I)
# Bare letters after the first that run to the end of the line: "Answer: C F", "Answer: A B D".
_BARE_NEXT = re.compile(r"[ \t]+\**([A-Z])\**(?=(?:[ \t]+\**[A-Z]\**)*[ \t]*(?:$|[.,;!?]))", re.M)
# An answer line that disowns its own letter: "Answer: F) -5 (a placeholder, since we cannot determine…)".
_DISOWNED = re.compile(r"\bplaceholder\b", re.I)
# Several letters run together (`Answer: ABCD`, `Answer: DAB`) name each of them.
_LETTER_RUN = re.compile(r"\**([A-Z]{2,10})\**(?=$|[\s.,;:!?)])")

_NOT_SMILES_NEXT = r"(?![\w(\[=#@+\-*\\/%])"  # keeps `CC(C)C` from reading as (C)
_STRUCTURED = (
    re.compile(r"\\boxed\s*\{\s*(?:\\text(?:bf)?\{|\\mathrm\{)?\s*([A-Za-z])\s*[})]"),  # \boxed{D) 10^{59} J/K}
    re.compile(r"(?:\*\*|__)\s*[(\[]?\s*([A-Z])\s*[)\]]?\s*[.:]?\s*(?:\*\*|__)"),
    re.compile(r"(?<![\w\])=#@+\-*\\/%])[(\[]\s*([A-Z])\s*[)\]]" + _NOT_SMILES_NEXT),
    re.compile(r"(?i:\b(?:option|candidate|choice))\s*[:#]?\s*[(\[]?\s*([A-Z])" + _NOT_SMILES_NEXT),
    re.compile(r"(?<!\S)([A-Z])\)" + _NOT_SMILES_NEXT),
    re.compile(r"^(?:[ \t>#_-]|\*\*|\*[ \t])*[(\[]?([A-Z])[)\]]?(?:[ \t.:!_]|\*\*)*$", re.M),
    re.compile(r"(?:\*\*|__)[ \t]*[(\[]?([A-Z])[)\]]" + _NOT_SMILES_NEXT),  # "…is **I) 1 m**."
)
# A letter after one of these words names a compound, reagent or step of the question
# ("compound C", "gas **D**"), not a candidate.
_NAMING_WORD = re.compile(
    r"\b(?:compound|product|gas|reagent|reactant|substance|intermediate|salt|acid|base|solution|mixture"
    r"|liquid|solid|element|species|molecule|isomer|structure|complex|catalyst|material|precipitate"
    r"|step|reaction|part|statement|tube|flask|sample|ion|peak|signal|соединение|продукт|вещество)"
    r"[ \t*_]*[(\[]?[ \t*_]*$",
    re.I,
)
_WHOLE_LABEL = re.compile(r"(?:\*\*|__)?\s*[(\[{]?\s*([A-Za-z])\s*[)\]}]?\s*(?:\*\*|__)?\s*[.!]?")

# An answer line: "Answer: B", "**Final answer:** B", "> Answer - B", "Correct Answer: D) …", "Ответ: A".
_ANSWER_LINE = re.compile(
    r"^[ \t>#*_-]*(?:(?:the\s+)?(?:final|correct|my|правильный|окончательный|итоговый|最终|正确)\s*)?"
    rf"{_ANSWER_WORD}\b[^\n]*$"
    r"|^[^\n]*?(?-i:(?<=[a-z])Answer):[^\n]*$",
    re.I | re.M,
)
_FINAL = re.compile(rf"\b{_FINAL_WORD}\b", re.I)

# A reply that declines to choose, or says the question cannot be answered from what it gives.
_REFUSAL = re.compile(
    r"\b(?:I|we|one)\s*(?:cannot|can't|can\s+not|am\s+unable\s+to|are\s+unable\s+to|'m\s+unable\s+to"
    r"|am\s+not\s+able\s+to|are\s+not\s+able\s+to|'m\s+not\s+able\s+to|will\s+not|won't)\s+"
    r"(?:reliably\s+|confidently\s+|definitively\s+|conclusively\s+|accurately\s+|uniquely\s+)?"
    r"(?:determine|decide|choose|pick|select|identify|assign|tell|say|answer|distinguish|help"
    r"|provide\s+(?:a|an|the)\s+(?:\w+\s+)?answer|give\s+(?:a|an|the)\s+(?:\w+\s+)?answer)\b"
    r"|\bI\s+(?:must|have\s+to)\s+decline\b"
    r"|\b(?:not\s+possible|impossible)\s+to\s+(?:definitively\s+|reliably\s+|confidently\s+)?"
    r"(?:determine|tell|say|choose|decide|select|pick|identify|assign)\b"
    r"|\bcannot\s+(?:be\s+)?(?:definitively\s+|reliably\s+|uniquely\s+)?"
    r"(?:determined|decided|answered|assigned|identified|chosen|selected)\b"
    r"|\b(?:insufficient|not\s+enough)\s+(?:information|data)\b",
    re.I,
)
# What a declared non-answer says in place of a letter: `Answer: None of the above`,
# `Answer: N/A`, `Answer: Insufficient information` (letters used as names, `Answer: A = NaCN,
# B = H3O+`, are _ASSIGNMENTS).
_NON_ANSWER = re.compile(
    r"[\s*_:(\[]*(?:none\b|n/?a\b|not\s+applicable|no\s+(?:correct\s+|valid\s+)?(?:answer|option|choice)"
    r"|not\s+(?:listed|given|among)|cannot\b|can't\b|unable\b|undetermin|indetermin|unknown\b"
    r"|insufficient|not\s+enough|impossible)",
    re.I,
)
# The reply says that no offered option is right ("none of the provided options is correct").
_NONE_OF = re.compile(
    r"\bnone\s+of\s+(?:the\s+)?(?:\w+\s+){0,2}(?:options|answers|choices|answer\s+choices)\b"
    r"|\b(?:correct|right)\s+answer\s+is\s+not\s+(?:given|listed|among|in)\b"
    r"|\bnot\s+(?:among|in)\s+the\s+(?:\w+\s+)?(?:options|choices)\b",
    re.I,
)
# An option line given as the answer: `**A) 3-cyano-6-…**`, `**Option C: "…"**`, `D ) A = …`.
_OPTION_LINE = re.compile(
    r"^[ \t>#*_-]*(?:\*\*|__)?[ \t]*"
    r"(?:(?:option|choice|вариант)[ \t]*[:#]?[ \t]*[(\[]?(?P<a>[A-Z])(?![\w(\[=#@+\-\\/%])[)\]]?"
    r"|[(\[](?P<b>[A-Z])[)\]]|(?P<c>[A-Z])[ \t]?\))"
    r"(?![\w(\[=#@+\-\\/%])",
    re.M | re.I,
)
# The line that introduces it ends in a colon after a verb ("…the correct answer is:", "…will be:",
# "…is actually:") or names the answer ("Final answers:"); "Let's compare the options:" does not.
_INTRO = re.compile(
    rf"(?:\b(?:is|are|be|was)\b(?:[ \t]+\w+)?|{_ANSWER_WORD}s?\b.*|является)[ \t*_]*[:：][ \t*_]*$",
    re.I,
)
# Words that may stand before "(B)" when it names an option ("…, but (B) fits"); after any other
# word the letter abbreviates it ("Debye (D)", "butanenitrile (B)").
_LEADS_OPTION = frozenset(
    "but or and is are be so thus hence therefore then choose pick select option answer choice "
    "candidate fragment substituent".split()
)
# Concessive words: a letter after them is granted in passing ("though (B) was considered").
_CONCEDES = frozenset("though although albeit whereas while even".split())
# How a finished reply's last line ends: a full stop, bracket or markup; or a label, alone on the
# line or closing an answer line ("Answer: B").
_ENDS_SENTENCE = re.compile(r"[.!?)\]}*_\"'`$:;\ue001]\Z")
_LONE_LABEL = re.compile(r"\W*[A-Za-z]\W*")
_ENDS_LABEL = re.compile(r"\b[A-Za-z]\Z")
_ANSWER_WORD_RE = re.compile(rf"\b{_ANSWER_WORD}\b", re.I)
_LABEL_AFTER = re.compile(r"(?<![\w(])[(\[]?[A-Z](?:[)\]]|\b(?![-'’]))")
_CUT_MIN = 1000  # characters: a reply shorter than about 250 tokens was not stopped by a token limit


def _cut_off(masked: str, *, answering: bool = False) -> bool:
    """Whether the reply stops mid-sentence, as one cut at its token limit does.

    ``masked`` still has its LaTeX (``$$`` closes a display). With ``answering``, a last line
    that names a label after an answer word counts as finished ("Final answer: B) 220-240"): the
    reply was giving its answer when it ended.
    """
    if len(masked) < _CUT_MIN:
        return False
    text = masked.rstrip()
    last = text[text.rfind("\n") + 1 :]
    if _ENDS_SENTENCE.search(last) or _LONE_LABEL.fullmatch(last):
        return False
    word = _strip_token(last.split()[-1])
    if _looks_like_smiles(word) and _canonical(word) is not None:
        return False  # "Answer: CCO" ends on a whole SMILES; "…4-methylc" does not parse
    if (answer := _ANSWER_WORD_RE.search(last)) and (
        _ENDS_LABEL.search(last) or (answering and _LABEL_AFTER.search(last, answer.end()))
    ):
        return False
    return True


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


def _strip_reasoning(text: str) -> str:
    """Drop inline reasoning (``<think>…</think>`` and its kin), so its letters never count."""
    text = _REASONING.sub("\n", text)
    if tail := _REASONING_TAIL.match(text):
        text = text[tail.end() :]
    return text


def _tags_as_answer_lines(text: str) -> str:
    """``[ANSWER]B[/ANSWER]`` and ``<answer>B</answer>`` as ``Answer: B`` lines."""
    return _ANSWER_TAG.sub(lambda m: f"\nAnswer: {next(g for g in m.groups() if g is not None).strip()}\n", text)


def _plain_latex(masked: str) -> str:
    """LaTeX wrappers and math delimiters dropped from text whose code spans are masked."""
    for _ in range(3):  # \text{\textbf{A}} nests
        masked = _TEX_WRAP.sub(lambda m: m.group(1), masked)
    masked = _TEX_SPACE.sub(" ", masked)
    return _TEX_DELIM.sub(" ", masked)


def _mask_code(text: str) -> tuple[str, list[list[str]]]:
    """Replace code spans by placeholders; return masked text and span tokens."""
    spans: list[list[str]] = []

    def repl(m: re.Match[str]) -> str:
        body = next(g for g in m.groups() if g is not None)
        tag = _LANG_TAG.match(body) if m.group(1) is not None else None
        if tag and body[tag.end() :].strip():
            body = body[tag.end() :]
        tokens = body.split()
        if len(tokens) > 1:  # prose in a code span: keep only SMILES-like words
            tokens = [t for t in tokens if _looks_like_smiles(t)] or [body.strip()]
        spans.append(tokens)  # an empty span names nothing
        return f" {_PH_OPEN}{len(spans) - 1}{_PH_CLOSE} "

    return _CODE.sub(repl, text), spans


def _target(masked, pos, spans, index, *, no_token=False, strong_only=False):
    """Read what a marker points at: (evidence or None, end position)."""
    if _ASSIGNMENTS.match(masked, pos):
        return None, pos
    if not strong_only and (run := _LETTER_RUN.match(masked, pos)):
        letters = run.group(1)
        # "CF" may be a SMILES; "ABC" is not
        if (
            len(set(letters)) == len(letters)
            and all(index._by_upper.get(c) for c in letters)
            and (len(letters) > 2 or not _looks_like_smiles(letters))
        ):
            return [index._label(c) for c in letters], run.end()
    m = _TARGET.match(masked, pos)
    if m and m.group("idx") is not None:
        return [index._smiles(t) for t in spans[int(m.group("idx"))]], m.end()
    if m:
        lab = m.group("lab")
        # A lone "(" is not a wrapper: "Answer: B (A is too long)" names only B.
        opener = m.group("open") or "("
        strong = bool(m.group("prefix") or m.group("close") or opener[0] in "*_\\")
        weak_ok = not strong_only and (
            (lab.isupper() and not (lab in "AI" and _WORD_AFTER.match(masked, m.end())))
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
        found, end = _target(masked, _MARKER_TAIL.match(masked, m.end()).end(), spans, index)
        if found is None:
            continue
        # "B or C", "A, B and D" name several; a gloss (`SMILES` after a label, (B) after a SMILES) must agree.
        while True:
            if bare := _BARE_NEXT.match(masked, end):  # "Answer: $C$ $F$": two letters side by side
                found, end = found + [index._label(bare.group(1))], bare.end(1)
                continue
            alt = _OR.match(masked, end)
            more, after = _target(masked, alt.end(), spans, index, no_token=True) if alt else (None, end)
            if more is None:
                break
            found, end = found + more, after
        gloss = _GLOSS.match(masked, end).end()
        found += _target(masked, gloss, spans, index, strong_only=True)[0] or []
        (final if m.group("final") else plain).extend(found)
    return final, plain


def _declared_non_answer(line: str, masked: str) -> ParsedAnswer | None:
    """The verdict on an answer line that puts a non-answer where the letter goes, or None."""
    marker = _MARKER.search(line)
    if marker is None:
        return None
    content = line[_MARKER_TAIL.match(line, marker.end()).end() :]
    if not content.strip() or not (_NON_ANSWER.match(content) or _ASSIGNMENTS.match(content)):
        return None
    refused = _REFUSAL.search(content) or _REFUSAL.search(masked)
    return ParsedAnswer(None, "refusal" if refused else "no_answer")


def _last_answer_line(masked: str, spans, candidates: CandidateIndex, *, cut: bool = False) -> ParsedAnswer | None:
    """The verdict of the last ``Answer:`` line that names a candidate, or None.

    A line that names no valid candidate (``Answer: (see above)``) does not decide, nor
    does any line above a later "final answer", which the tiered reading then weighs;
    but a line that declares a non-answer (``Answer: None of the above``) decides that
    the reply is invalid. A line whose answer is on the next line (``Answer:`` then
    ``B``) is read across it.
    """
    for line in reversed(list(_ANSWER_LINE.finditer(masked))):
        if _FINAL.search(masked, line.end()):
            return None
        final, plain = _marker_evidence(line.group(), spans, candidates)
        if not (final or plain):
            following = masked.find("\n", line.end() + 1)
            final, plain = _marker_evidence(
                masked[line.start() : following if following >= 0 else None], spans, candidates
            )
        evidence = final or plain
        if any(isinstance(e, frozenset) for e in evidence):
            if _DISOWNED.search(line.group()):
                return ParsedAnswer(None, "refusal")
            return (cut and _unsettled(masked, line, spans, candidates)) or _resolve(evidence)
        declared = _declared_non_answer(line.group(), masked)
        # "Final Answer: A = H3O+, B = HCl\n\nThus, option C is correct." names C after all
        if declared is not None and not any(
            isinstance(e, frozenset) for e in _structured(masked, spans, candidates, line.end())
        ):
            return declared
    return None


def _unsettled(masked: str, last: re.Match[str], spans, candidates: CandidateIndex) -> ParsedAnswer | None:
    """``ambiguous`` for a reply (one cut off mid-sentence) whose answer lines disagree, else None.

    A model that loops ("Answer: A … Answer: B … Answer: A …") until its tokens run out never
    settled; its last answer line is only where the loop happened to stop.
    """
    named = set()
    for line in _ANSWER_LINE.finditer(masked, 0, last.end()):
        final, plain = _marker_evidence(line.group(), spans, candidates)
        named |= {label for e in final + plain if isinstance(e, frozenset) for label in e}
    # cut inside its last answer line, a reply that revised once may still have meant it
    enough = 2 if masked[last.end() :].strip() else 3
    return ParsedAnswer(None, "ambiguous") if len(named) >= enough else None


def _introduced_option(masked: str, candidates: CandidateIndex) -> tuple[ParsedAnswer, int] | None:
    """The option line(s) that the reply's last "…is:" introduces, and where they end; or None.

    ``The product will be:`` followed by ``D) …`` gives D; the lines directly under the
    introduction are read until a blank line, so ``Final answers:`` over two option lines
    is ambiguous.
    """
    intros = list(re.finditer(r"^[^\n]*$", masked, re.M))
    for k in range(len(intros) - 1, -1, -1):
        if not _INTRO.search(intros[k].group()):
            continue
        block: list[re.Match[str]] = []
        for line in intros[k + 1 :]:
            if not line.group().strip():
                if block:
                    break
                continue
            block.append(line)
        if not block or not _OPTION_LINE.match(block[0].group()):
            return None  # the last introduction introduces something else
        labels = [_option_label(line.group()) for line in block]
        if None in labels:
            return None  # "A) HCl, B) 3-(2-oxocyclohexyl)propanal": letters naming the question's parts
        return _resolve([candidates._label(label) for label in labels if label]), block[-1].end()
    return None


_LETTER_PAREN = re.compile(r"(?<![\w(\[])\**([A-Z])\)")


def _option_label(line: str) -> str | None:
    """The option an option line names; "" for a line that is not one; None where the line pairs
    several letters with values ("A) HCl, B) …"), naming the question's parts rather than an option."""
    m = _OPTION_LINE.match(line)
    if not m:
        return ""
    label = m.group("a") or m.group("b") or m.group("c")
    others = {x.group(1) for x in _LETTER_PAREN.finditer(line, m.end())} - {label}
    return None if others else label


def _leads_option(before: str, letter: str) -> bool:
    """Whether the text before "(B)" on its line lets it name an option: nothing, punctuation, a
    function word, or any word the letter cannot abbreviate. Only a word that starts with the letter
    makes it an abbreviation ("Debye (D)", "butanenitrile (B)"): "Either (A) or (B)" names two options,
    and dropping one of them would turn a hedge into the other letter."""
    before = before.rstrip(" \t*_")
    if not before or not (before[-1].isalnum() or before[-1] == "_"):
        return True
    word = before.rsplit(None, 1)[-1]
    if word.lower() in _LEADS_OPTION or any(c.isdigit() for c in word):  # "0.75 (J)": the value of option J
        return True
    if word.lower() in _CONCEDES:  # "…, though (B) was considered": a side remark, not a choice
        return False
    return not word.lstrip("*_([").lower().startswith(letter.lower())


_NAME_WINDOW = 200  # characters before a mention that can make it a name; bounds the work on long lines


def _names_something(masked: str, m: re.Match[str]) -> bool:
    """Whether a structured mention is a name or a unit rather than an option ("gas D", "(85 K)")."""
    # the same line, up to a window wide enough for a unit's parenthesis or a naming word
    window = max(0, m.start() - _NAME_WINDOW)
    before = masked[max(window, masked.rfind("\n", window, m.start()) + 1) : m.start()]
    if _NAMING_WORD.search(before[-40:]):
        return True
    if m.re is _STRUCTURED[2] and not _leads_option(before, m.group(1)):
        return True
    # "K)" closing "(85 K)" is a unit inside a parenthesis, not option K
    return m.re is _STRUCTURED[4] and before.count("(") > before.count(")")


def _closing_option(masked: str, candidates: CandidateIndex) -> ParsedAnswer | None:
    """The option a reply ends on in bold, alone in its last paragraph (``**A) 3-cyano-…**``), or None."""
    last = masked.rstrip().rsplit("\n\n", 1)[-1].strip()
    if "\n" in last or not last.startswith(("**", "__")):
        return None
    if label := _option_label(last):
        return _resolve([candidates._label(label)])
    return None


def _structured(masked: str, spans, candidates: CandidateIndex, start: int = 0) -> list[_Evidence]:
    """Label mentions and code spans from ``start`` on, skipping letters that name compounds."""
    evidence: list[_Evidence] = []
    for pattern in _STRUCTURED:
        for m in pattern.finditer(masked, start):
            if not _names_something(masked, m):
                evidence.append(candidates._label(m.group(1)))
    for i, tokens in enumerate(spans):
        if masked.find(f"{_PH_OPEN}{i}{_PH_CLOSE}") >= start:
            evidence.extend(candidates._smiles(t) for t in tokens)
    return evidence


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
    >>> parse_answer("<think>A looks right... no, B.</think>\nAnswer: $\\text{A}$", idx)
    ParsedAnswer(choice='A', reason=None)
    >>> parse_answer("Neither fits the spectrum.\nAnswer: None of the above", idx)
    ParsedAnswer(choice=None, reason='no_answer')
    >>> parse_answer("[ANSWER]B[/ANSWER]", idx)
    ParsedAnswer(choice='B', reason=None)
    """
    if not text or not text.strip():
        return ParsedAnswer(None, "no_answer")
    text = text.replace(_PH_OPEN, "").replace(_PH_CLOSE, "")  # no forged placeholders
    text = _tags_as_answer_lines(_strip_reasoning(text))
    masked, spans = _mask_code(text)
    cut = _cut_off(masked)  # judged before LaTeX goes: a closing $$ ends a finished reply
    answering_cut = _cut_off(masked, answering=True)
    masked = _plain_latex(masked)
    stripped = masked.strip()
    if not stripped:
        return ParsedAnswer(None, "no_answer")
    if whole := _WHOLE_LABEL.fullmatch(stripped):
        return _resolve([candidates._label(whole.group(1))])

    if (decided := _last_answer_line(masked, spans, candidates, cut=cut)) is not None:
        return decided

    final, plain = _marker_evidence(masked, spans, candidates)
    if final or plain:
        return _resolve(final or plain)

    # An introduced option line, or a refusal or "none of the options", whichever comes last;
    # a decline stands only where no candidate is named after it.
    introduced = _introduced_option(masked, candidates)
    declines = [m.end() for pattern in (_REFUSAL, _NONE_OF) for m in pattern.finditer(masked)]
    if declines and max(declines) > (introduced[1] if introduced else -1):
        if not any(isinstance(e, frozenset) for e in _structured(masked, spans, candidates, max(declines))):
            return ParsedAnswer(None, "refusal" if _REFUSAL.search(masked) else "no_answer")
    if introduced is not None:
        return introduced[0]
    if (closing := _closing_option(masked, candidates)) is not None:
        return closing

    evidence = _structured(masked, spans, candidates)
    token = _strip_token(stripped)
    if not spans and _TOKEN.fullmatch(stripped) and _looks_like_smiles(token):
        evidence.append(candidates._smiles(token))  # a response that is only a SMILES
    result = _resolve(evidence)
    if result.reason != "no_answer" and answering_cut:
        # cut off mid-sentence before any answer line, marker or introduced option: the options
        # it mentions ("close to option B, but let's check…") are its reasoning, not an answer
        return ParsedAnswer(None, "no_answer")
    return result


def parse_answers(pairs: Iterable[tuple[str | None, CandidateIndex]], memo: dict | None = None) -> list[ParsedAnswer]:
    """``parse_answer`` of each ``(text, candidates)`` pair, a text parsed once per set of labels
    where its parse compares no SMILES with the candidates.

    The parser reads a family's candidates through their labels and their SMILES only. Where a
    parse compared no SMILES (a letter, a refusal, no answer at all), another family with the same
    labels gets the same answer from the same text, so it is read once: the default data's 51,000
    (family, text) pairs hold about 11,000 distinct texts, most of them naming a letter. ``memo``
    carries those parses from one call to the next (a caller's cache, cleared by the caller).
    """
    memo = {} if memo is None else memo
    parsed: list[ParsedAnswer] = []
    for text, candidates in pairs:
        key = (candidates.labels, text)
        if (known := memo.get(key)) is None:
            candidates.smiles_read = False
            known = parse_answer(text, candidates)
            if not candidates.smiles_read:
                memo[key] = known
        parsed.append(known)
    return parsed
