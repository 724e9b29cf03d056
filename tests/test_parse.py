"""Tests for molp2s_stats.parse: raw response text -> candidate label."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from molp2s_stats.parse import INVALID_REASONS, CandidateIndex, ParsedAnswer, parse_answer

# Scaffold c1ccccc1[*]: four substituents, fragment and completed molecule each.
BASIC = CandidateIndex(
    {
        "A": ("[*]CCC", "CCCc1ccccc1"),  # propyl
        "B": ("[*]C(C)C", "CC(C)c1ccccc1"),  # isopropyl
        "C": ("[*]OC", "COc1ccccc1"),  # methoxy
        "D": ("[*]C(=O)C", "CC(=O)c1ccccc1"),  # acetyl
    }
)

# Stereo-distinct pairs (A/B tetrahedral, C/D double bond) plus one stereo
# candidate (E) and one chiral centre written without stereo (F).
STEREO = CandidateIndex(
    {
        "A": ("[*][C@@H](C)O", "C[C@@H](O)c1ccccc1"),
        "B": ("[*][C@H](C)O", "C[C@H](O)c1ccccc1"),
        "C": ("[*]/C=C/C", "C/C=C/c1ccccc1"),
        "D": ("[*]/C=C\\C", "C/C=C\\c1ccccc1"),
        "E": ("[*][C@H](F)Cl", "F[C@H](Cl)c1ccccc1"),
        "F": ("[*]C(O)CC", "CCC(O)c1ccccc1"),
    }
)

# A and B are the same fragment spelled two ways.
DUPLICATE = CandidateIndex(
    {
        "A": ("[*]CC", "CCc1ccccc1"),
        "B": ("CC[*]", "c1ccccc1CC"),
        "C": ("[*]O", "Oc1ccccc1"),
    }
)

BASIC_CASES = [
    # --- a response that is only the label
    ("B", "B", None),
    ("  B.  ", "B", None),
    ("b", "B", None),
    ("(B)", "B", None),
    ("[B]", "B", None),
    ("**B**", "B", None),
    ("B)", "B", None),
    # --- answer markers
    ("Answer: B", "B", None),
    ("answer: b", "B", None),
    ("ANSWER: B", "B", None),
    ("The answer is B", "B", None),
    ("answer is c", "C", None),
    ("The answer is (C).", "C", None),
    ("Final answer: **D**", "D", None),
    ("**Answer:** C", "C", None),
    ("**Answer: D**", "D", None),
    ("The answer: D \u2014 acetyl", "D", None),
    ("**Answer**: B", "B", None),
    ("My answer would be B.", "B", None),
    ("Answer:\n\nB", "B", None),
    ("\\boxed{\\textbf{B}}", "B", None),
    ("Answer: `[*]CCC`, which corresponds to option A.", "A", None),
    ("Answer: `[*]CCC` or `[*]OC`", None, "ambiguous"),
    ("The correct option is B.", "B", None),
    ("The answer is option B", "B", None),
    ("Answer: C.", "C", None),
    ("Answer: C)", "C", None),
    ("Final Answer: $\\boxed{D}$", "D", None),
    # --- other structured forms
    ("Option B", "B", None),
    ("Candidate C is the best fit.", "C", None),
    ("\\boxed{A}", "A", None),
    ("$\\boxed{\\text{C}}$", "C", None),
    ("\\boxed{b}", "B", None),
    ("B) isopropyl", "B", None),
    ("The (R)-enantiomer does not matter here; **C**", "C", None),
    # --- answer markers take precedence over mentions elsewhere
    ("(A) is too long because the chain is linear. Answer: C", "C", None),
    ("A) propyl\nB) isopropyl\nC) methoxy\nAnswer: B", "B", None),
    ("The answer is A. On reflection, final answer: C", "C", None),
    ("Final answer: A\n\n(B) was also considered.", "A", None),
    ("Answer: I think it is (B)", "B", None),
    ("Answer: B (A is too long)", "B", None),
    # --- ambiguous labels
    ("(A) or (B) could both fit.", None, "ambiguous"),
    ("**A** looks good, but **B** is also possible", None, "ambiguous"),
    ("Answer: B or C", None, "ambiguous"),
    # the last Answer: line decides, whatever the lines above it name
    ("Answer: A\nAnswer: D", "D", None),
    ("A fits the dipole; C does not.\nAnswer: C", "C", None),
    ("The answer is A, though (B) is close.\n**Answer:** B", "B", None),
    ("Answer: C\nOn reflection the dipole fits B better.", "C", None),
    ("B and C both fit.\nAnswer: B or C", None, "ambiguous"),
    # refusals stand apart from answers that name nothing
    ("I cannot determine which fragment this is from the data given.", None, "refusal"),
    ("I'm sorry, but it is not possible to tell these apart.", None, "refusal"),
    ("The spectrum is broad.", None, "no_answer"),
    ("I cannot be sure, but (B) fits best.", "B", None),
    # the last Answer: line decides only where it names a candidate, and not over a later final answer
    ("Answer: B\n\nOn reflection, my final answer is C.", "C", None),
    ("Answer: B\nWait, I made an error. The final answer is **C**.", "C", None),
    ("Answer: B\n\nAnswer: (see above)", "B", None),
    ("Answer: B\nAnswer choices considered: all", "B", None),
    ("Answer: A\nActually no.\nAnswer:\nB", "B", None),
    # hedges are not refusals
    ("I cannot rule out A, but B fits better.", None, "no_answer"),
    ("I am sorry, but the isopropyl fragment fits best.", None, "no_answer"),
    ("I can't reliably determine the fragment from these data.", None, "refusal"),
    ("There is insufficient information to decide.", None, "refusal"),
    # --- explicit labels outside the family
    ("Answer: F", None, "not_a_candidate"),
    ("Answer: E", None, "not_a_candidate"),
    ("(Z)", None, "not_a_candidate"),
    ("Option G", None, "not_a_candidate"),
    # --- backticks are SMILES, never labels
    ("Answer: `*C(C)C`", "B", None),
    ("Answer: `C`", None, "not_a_candidate"),
    ("`C`", None, "not_a_candidate"),
    ("Answer: `B`", None, "not_a_candidate"),
    ("Candidate `[*]C(C)C`", "B", None),
    ("Answer: **`[*]OC`**", "C", None),
    # --- every attachment-point spelling of one fragment
    ("`[*]C(C)C`", "B", None),
    ("`*C(C)C`", "B", None),
    ("`[1*]C(C)C`", "B", None),
    ("`[2*]C(C)C`", "B", None),
    ("`[*:1]C(C)C`", "B", None),
    ("`C(C)(C)[*]`", "B", None),
    ("`CC([*:2])C`", "B", None),
    # --- completed molecules and alternative spellings
    ("`CC(C)c1ccccc1`", "B", None),
    ("`c1ccc(cc1)C(C)C`", "B", None),
    ("`C1=CC=CC=C1C(C)C`", "B", None),
    ("```\n[*]OC\n```", "C", None),
    ("```smiles\nCOc1ccccc1\n```", "C", None),
    ("```CC(=O)c1ccccc1```", "D", None),
    ("The best fit is `CCCc1ccccc1`.", "A", None),
    # --- bare SMILES after a marker, or as the whole response
    ("Answer: CC(=O)c1ccccc1", "D", None),
    ("Answer: *OC", "C", None),
    ("Answer: [*]C(C)C", "B", None),
    ("Answer: **CCCc1ccccc1**", "A", None),
    ("CCCc1ccccc1", "A", None),
    ("[*]C(=O)C", "D", None),
    ("*C(C)C.", "B", None),
    ("COc1ccccc1", "C", None),
    # --- invalid SMILES
    ("Answer: `C1CC`", None, "bad_smiles"),
    ("`[*]C(C`", None, "bad_smiles"),
    ("Answer: C(C", None, "bad_smiles"),
    ("Answer: `c1cccc1`", None, "bad_smiles"),
    # --- valid SMILES naming no candidate
    ("Answer: `CCCC`", None, "not_a_candidate"),
    ("`[*]CCCC`", None, "not_a_candidate"),
    ("`c1ccccc1[*]`", None, "not_a_candidate"),
    ("CCO", None, "not_a_candidate"),
    # --- labels and SMILES together
    ("Answer: B, i.e. `[*]C(C)C`", "B", None),
    ("Answer: `[*]C(C)C` (B)", "B", None),
    ("Answer: B (`[*]OC`)", None, "ambiguous"),
    ("**B**: the fragment `*C(C)C` fits", "B", None),
    ("**B** fits, though `*OC` was considered", None, "ambiguous"),
    ("`[*]CCC` or `[*]C(C)C`", None, "ambiguous"),
    ("answer: `[*]CCC`\nanswer: `CCCc1ccccc1`", "A", None),
    # --- nothing to read
    ("", None, "no_answer"),
    (None, None, "no_answer"),
    ("   \n\t ", None, "no_answer"),
    ("I am not sure.", None, "no_answer"),
    ("Hello", None, "no_answer"),
    ("A fragment like propyl would fit here.", None, "no_answer"),
    ("A propyl group is the most likely substituent.", None, "no_answer"),
    ("The answer is a propyl group.", None, "no_answer"),
    ("The isopropyl fragment CC(C)C is best", None, "no_answer"),
    ("Answers A and B are both plausible", None, "no_answer"),
    ("To answer this, consider the NMR shifts.", None, "no_answer"),
    ("I choose B.", None, "no_answer"),  # a bare label in prose is not structured
    ("``````", None, "no_answer"),
]

STEREO_CASES = [
    ("`[*][C@@H](C)O`", "A", None),
    ("`[*][C@H](C)O`", "B", None),
    ("`O[C@@H](C)[*]`", "B", None),  # same centre written in another order
    ("`C[C@@H](O)c1ccccc1`", "A", None),
    ("`[*]/C=C/C`", "C", None),
    ("`[*]/C=C\\C`", "D", None),
    ("`C/C=C\\c1ccccc1`", "D", None),
    ("`[*]C(C)O`", None, "ambiguous"),  # no stereo: both A and B
    ("`CC(O)c1ccccc1`", None, "ambiguous"),
    ("`[*]C=CC`", None, "ambiguous"),
    ("`[*]C(F)Cl`", "E", None),  # stereo-insensitive fallback
    ("`[*][C@@H](F)Cl`", "E", None),  # wrong stereo still falls back to E
    ("`[*][C@H](O)CC`", "F", None),  # stereo given, candidate has none
    ("Answer: E", "E", None),
    ("Answer: G", None, "not_a_candidate"),
]

DUPLICATE_CASES = [
    ("`*CC`", None, "ambiguous"),
    ("`CCc1ccccc1`", None, "ambiguous"),
    ("Answer: B", "B", None),
    ("`[*]O`", "C", None),
    ("Answer: B (`*CC`)", "B", None),  # the label breaks the tie the SMILES leaves
]


def _check(index: CandidateIndex, text, choice, reason):
    assert parse_answer(text, index) == ParsedAnswer(choice, reason)


@pytest.mark.parametrize(("text", "choice", "reason"), BASIC_CASES)
def test_basic_family(text, choice, reason):
    _check(BASIC, text, choice, reason)


@pytest.mark.parametrize(("text", "choice", "reason"), STEREO_CASES)
def test_stereo_family(text, choice, reason):
    _check(STEREO, text, choice, reason)


@pytest.mark.parametrize(("text", "choice", "reason"), DUPLICATE_CASES)
def test_duplicate_family(text, choice, reason):
    _check(DUPLICATE, text, choice, reason)


def test_every_reason_is_exercised():
    reasons = {r for cases in (BASIC_CASES, STEREO_CASES, DUPLICATE_CASES) for *_, r in cases}
    # request_failed and truncated are the loader's (a request with no answer, or one cut at its
    # token limit): test_batches.py
    assert set(INVALID_REASONS) - {"request_failed", "truncated"} <= reasons


def test_labels_and_match_smiles():
    assert BASIC.labels == ("A", "B", "C", "D")
    assert BASIC.match_smiles("[*:1]C(C)C") == ParsedAnswer("B", None)
    assert BASIC.match_smiles("c1ccccc1OC") == ParsedAnswer("C", None)
    assert BASIC.match_smiles("C(") == ParsedAnswer(None, "bad_smiles")
    assert BASIC.match_smiles("") == ParsedAnswer(None, "bad_smiles")
    assert BASIC.match_smiles("CCCC") == ParsedAnswer(None, "not_a_candidate")
    assert DUPLICATE.match_smiles("[*]CC") == ParsedAnswer(None, "ambiguous")


def test_labels_beyond_f():
    index = CandidateIndex({k: (f"[*]{'C' * (i + 1)}", "") for i, k in enumerate("ABCDEFGH")})
    assert parse_answer("Answer: H", index) == ParsedAnswer("H", None)
    assert parse_answer("`[*]CCCCCCC`", index) == ParsedAnswer("G", None)


def test_invalid_candidate_smiles_raises():
    with pytest.raises(ValueError):
        CandidateIndex({"A": ("[*]C(", "CC")})


def _assert_well_formed(result: ParsedAnswer, index: CandidateIndex):
    assert isinstance(result, ParsedAnswer)
    if result.choice is not None:
        assert result.choice in index.labels and result.reason is None
    else:
        assert result.reason in INVALID_REASONS


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text):
    _assert_well_formed(parse_answer(text, BASIC), BASIC)


# Text assembled from the pieces the parser reacts to, to reach deeper branches.
_PIECES = st.sampled_from(
    ["Answer:", "final answer", " is ", "(", ")", "[", "]", "**", "`", "```", "\\boxed{",
     "}", "A", "B", "C", "F", "b", "*", "[*]", "C(C)C", "c1ccccc1", "OC", " ", "\n",
     ".", "or", "Option", "\ue000", "\ue001", "0", "i.e."]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=20).map("".join))
def test_structured_noise_never_raises(text):
    for index in (BASIC, STEREO, DUPLICATE):
        _assert_well_formed(parse_answer(text, index), index)
