"""Tests for molp2s_stats.ingest.answers: raw response text -> candidate label."""

from __future__ import annotations

import importlib.util
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from molp2s_stats.ingest.answers import INVALID_REASONS, CandidateIndex, ParsedAnswer, parse_answer, parse_answers

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

# Answers as real models write them (issue 21, section 2), each class with the trap it sets.
REAL_WORLD_CASES = [
    # --- letters inside LaTeX
    ("A and B were considered.\nAnswer: $\\text{A}$", "A", None),
    ("A and B were considered.\nAnswer: \\text{C}", "C", None),
    ("Answer: $D$", "D", None),
    ("Answer: $C", "C", None),  # the closing $ never came
    ("Answer: \\( \\mathrm{B} \\)", "B", None),
    ("The answer is\n\\[ D \\]", "D", None),
    ("\\[\n\\text{Answer: } \\text{B}\n\\]", "B", None),
    (
        "Thus, the correct option that matches all three products is:\n\n"
        "$$ D ) \\quad A = \\text{propyl}, \\quad B = \\text{methoxy} $$",
        "D",
        None,
    ),
    ("\\boxed{\\text{\\textbf{C}}}", "C", None),
    ("Answer choice: $\\boxed {D}$", "D", None),
    ("The order of magnitude is:\n\\[ \\boxed{D) 10^{59} \\, J/K} \\]", "D", None),
    ("Answer: «B»", "B", None),
    # --- an option line given as the answer, without Answer:
    ("Option B is wrong; option C too.\n\n**A) 3-cyano-6-(dimethylamino)benzoic acid**", "A", None),
    (
        'Options B and D fail.\n\nThe incorrect statement is:\n\n**Option C: "C is a flammable gas."**\n\n'
        "This is so because compound A burns.",
        "C",
        None,
    ),
    ("A fails, B fails.\nCorrect Answer: D) 4-methylcycloheptan-1-one", "D", None),
    ("The closest option to the calculated value is **C) 1 m**.", "C", None),
    ("After the coefficients, the final answer matches option **B**:\n  y[n] = 3^n", "B", None),
    (
        "So the values are:\n- the propensity to consume is 0.75 (A).\n- the propensity to save is 0.25 (D).",
        None,
        "ambiguous",
    ),
    ("The product of the reaction will be:\n\nD) (1R,4R,5R)-2,2,4,5-tetramethylcyclohexan-1-ol", "D", None),
    ("The correct sequence of reagents is:\n\nB) 1. NaNH2, methyl chloride\n2. H2/Pd\n3. O3/(CH3)2S", "B", None),
    ("Final answers:\nA) A = cyclohexane-1,3,5-trione\nB) A = benzoquinone", None, "ambiguous"),
    ("Therefore, the correct answers are:\n\nA) HCl, B) 3-(2-oxocyclohexyl)propanal", None, "ambiguous"),  # names
    ("Let's compare the options:\n\nA) too long\n\nB) too short", None, "ambiguous"),
    # --- an answer line in another language beats the letters named before it
    ("Option A is wrong and (B) is right.\nОтвет: A", "A", None),
    ("Таким образом, продукт D должен быть:\n\n**Ответ: C**", "C", None),
    ("选项 B 不对。\n答案：C", "C", None),
    ("Option A passt nicht, (B) auch nicht.\nAntwort: D", "D", None),
    ("L'option A est fausse.\nRéponse : B", "B", None),
    ("La opción A es falsa.\nRespuesta: C", "C", None),
    # --- a declared non-answer is never a letter
    ("(B) looks plausible, but none fits.\nAnswer: None of the above", None, "no_answer"),
    ("Answer: B\n\nOn reflection the spectrum fits nothing.\nAnswer: None", None, "no_answer"),
    ("(B) looks plausible.\nAnswer: Insufficient Information", None, "refusal"),
    ("It is not possible to choose the correct answer from the given options.\n\nAnswer: N/A", None, "refusal"),
    (
        "The options provided do not match; we cannot determine the correct answer.\nAnswer: None of the above",
        None,
        "refusal",
    ),
    ("Answer: ABC", None, "ambiguous"),
    ("Answer: DAB", None, "ambiguous"),
    ("Answer: A and C", None, "ambiguous"),
    ("Answer: $C$ $D$", None, "ambiguous"),
    ("Answer: A B D", None, "ambiguous"),
    ("Answer: B A is too long", "B", None),
    ("Answer: D) -5 (This is a placeholder value since we cannot determine the correct answer.)", None, "refusal"),
    ("Answer: B (I cannot rule out C, but B is closer)", "B", None),
    ("Answer: A = NaCN, B = H3O+ for the first reaction", None, "no_answer"),
    ("**Answer:** A = H2O and B = HCl", None, "no_answer"),
    ("The fitting combination is:\n\n**Final Answer: A = H3O+, B = HCl**\n\nThus, option C is correct.", "C", None),
    ("Answer: B = isopropyl", "B", None),  # one letter glossed, not letters used as names
    ("The calculated value is not listed; none of the provided options (A through D) is correct.", None, "no_answer"),
    # --- letters used as names in the reasoning do not take over
    ("Compound C is the enol and gas D is CO2; product (B) forms last.", None, "no_answer"),
    ("The gas **D** is oxygen and compound **C** forms from it.", None, "no_answer"),
    ("Its dipole moment in Debye (D) is large.", None, "no_answer"),
    ("At the boiling point (77 K) the pressure is 1 atm.", None, "no_answer"),
    ("Compound C is an ester. The best fit is **B**.", "B", None),
    # --- refusals
    ("Given the data, we cannot choose an answer.", None, "refusal"),
    ("We cannot definitively assign the structure, though (B) was considered.", None, "refusal"),
    ("Without the spectrum the fragment cannot be determined.", None, "refusal"),
    ("None of the options can be ruled out. I cannot be sure, but (B) fits best.", "B", None),
    ("It's impossible to choose between B and C with certainty.\n\nAnswer: $D$", "D", None),  # it still chose
    # --- ChemBench's answer tags
    ("A is ruled out. [ANSWER]B[/ANSWER]", "B", None),
    ("[ANSWER]b[/ANSWER]", "B", None),
    ("[ANSWER] C [/ANSWER]", "C", None),
    ("[ANSWER]A, C[/ANSWER]", None, "ambiguous"),
    ("[ANSWER]A[/ANSWER]\nOn reflection: [ANSWER]D[/ANSWER]", "D", None),
    ("[ANSWER]`[*]OC`[/ANSWER]", "C", None),
    ("<answer>D</answer>", "D", None),
    # --- inline reasoning never counts
    ("<think>A? maybe C. Answer: C</think>\nAnswer: B", "B", None),
    ("<think>\n[ANSWER]A[/ANSWER]\n</think>\n[ANSWER]B[/ANSWER]", "B", None),
    ("<thinking>Answer: C</thinking>The answer is (D).", "D", None),
    ("<reasoning>A</reasoning>**B**", "B", None),
    ("<THINK>Answer: A</THINK>Answer: C", "C", None),
    ("<think>Thinking about A... Answer: A", None, "no_answer"),  # stopped while thinking
    ("Thinking about A. Answer: A</think>\n\nB", "B", None),  # the template opened the block
    # --- looping replies cut off at the token limit
    (
        "\n".join(
            ["Let me reconsider the sequence once more, step by step, with care."] * 10
            + [f"**Answer: {x}** (with the understanding that it may need correction)." for x in "CABCAB"]
            + ["However, to strictly adhere to the format and provide a clear answer based on the"]
        ),
        None,
        "ambiguous",
    ),
    (
        "\n".join(
            ["Let me reconsider the sequence once more, step by step, with care."] * 20
            + ["Answer: A", "This needs a check.", "Answer: B", "And so the final structure is the one with"]
        ),
        None,
        "ambiguous",
    ),
    (
        "\n".join(
            ["(A) or (B) might fit, so the options are weighed again, step by step, with care."] * 20
            + ["Comparing the remaining shifts, the value of the coupling constant for"]
        ),
        None,
        "no_answer",
    ),
    (
        "\n".join(
            ["The pH is computed again from the dissociation constant, step by step, with care."] * 20
            + [
                "This value is close to option B, but let's check the equivalence point as well.",
                "At the equivalence point the concentration of acetate is",
            ]
        ),
        None,
        "no_answer",
    ),
    ("Answer: A\nThis needs a check.\nAnswer: B\nThe coupling fits B.", "B", None),  # finished: last wins
    (
        "\n".join(
            ["The shifts are weighed once more, step by step, with care and patience."] * 20
            + ["Answer: `[*]CCC`", "No: the branch fits better.", "Answer: B", "the fragment being CC(C)C"]
        ),
        "B",
        None,
    ),  # ends on a whole SMILES, not cut off
    (
        "Answer: A) wrong.\nAnswer: B) closest.\nAnswer: C) wrong.\n"
        + "Checking the units again. " * 50
        + "\nThe closest option is:\n\nAnswer: B",
        "B",
        None,
    ),
    # --- a capital that opens a phrase is a word, not a label
    ("Final answer: A thorough understanding is needed; none of the provided options addresses it.", None, "no_answer"),
    ("Answer: A mixture of both isomers forms.", None, "no_answer"),
    ("Answer: A is the only one that fits.", "A", None),
    # --- the requested Answer: glued to the word before it
    ("stereotype tightened Crew trade magnets fascAnswer: D", "D", None),
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


@pytest.mark.parametrize(("text", "choice", "reason"), REAL_WORLD_CASES)
def test_answers_as_real_models_write_them(text, choice, reason):
    _check(BASIC, text, choice, reason)


@pytest.mark.parametrize(("text", "choice", "reason"), DUPLICATE_CASES)
def test_duplicate_family(text, choice, reason):
    _check(DUPLICATE, text, choice, reason)


def test_every_reason_is_exercised():
    reasons = {r for cases in (BASIC_CASES, STEREO_CASES, DUPLICATE_CASES, REAL_WORLD_CASES) for *_, r in cases}
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
    [
        "Answer:",
        "final answer",
        " is ",
        "(",
        ")",
        "[",
        "]",
        "**",
        "`",
        "```",
        "\\boxed{",
        "}",
        "A",
        "B",
        "C",
        "F",
        "b",
        "*",
        "[*]",
        "C(C)C",
        "c1ccccc1",
        "OC",
        " ",
        "\n",
        ".",
        "or",
        "Option",
        "\ue000",
        "\ue001",
        "0",
        "i.e.",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=20).map("".join))
def test_structured_noise_never_raises(text):
    for index in (BASIC, STEREO, DUPLICATE):
        _assert_well_formed(parse_answer(text, index), index)


# BASIC's labels with other candidates: a letter means the same in both, a SMILES does not.
SAME_LABELS = CandidateIndex(
    {
        "A": ("[*]OC", "COc1ccccc1"),
        "B": ("[*]CCC", "CCCc1ccccc1"),
        "C": ("[*]C(=O)C", "CC(=O)c1ccccc1"),
        "D": ("[*]CC", "CCc1ccccc1"),
    }
)
_SMILES_PIECES = st.sampled_from(["`[*]CCC`", "`[*]OC`", "CCCc1ccccc1", "`CCc1ccccc1`", " [*]C(C)C ", "`C1CC`"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_PIECES | _SMILES_PIECES, max_size=12).map("".join), min_size=1, max_size=6))
def test_parse_answers_is_parse_answer_of_each_pair(texts):
    """A text read once per set of labels only where its parse compares no SMILES: families that
    share the labels but not the candidates still get their own reading of a SMILES."""
    pairs = [(text, index) for text in texts for index in (BASIC, SAME_LABELS, STEREO, BASIC)]
    memo: dict = {}
    assert parse_answers(pairs, memo) == [parse_answer(text, index) for text, index in pairs]
    assert parse_answers(pairs, memo) == [parse_answer(text, index) for text, index in pairs]  # from the memo


def test_a_letter_is_read_once_per_set_of_labels_and_a_smiles_once_per_family():
    memo: dict = {}
    parsed = parse_answers(
        [
            ("Answer: B", BASIC),
            ("Answer: B", SAME_LABELS),
            ("Answer: `[*]CCC`", BASIC),
            ("Answer: `[*]CCC`", SAME_LABELS),
        ],
        memo,
    )
    assert parsed == [
        ParsedAnswer("B", None),
        ParsedAnswer("B", None),
        ParsedAnswer("A", None),
        ParsedAnswer("B", None),
    ]
    assert list(memo) == [(BASIC.labels, "Answer: B")]


# Reasoning text built from the pieces above, without backticks (text in backticks is SMILES and
# an unclosed ``` would swallow the answer line) and without closing reasoning tags.
_REASONING_TEXT = st.lists(_PIECES.filter(lambda p: "`" not in p), max_size=20).map("".join) | st.text(
    alphabet=st.characters(blacklist_characters="`<>"), max_size=200
)
_LABELS = st.sampled_from(BASIC.labels)


@settings(max_examples=300, deadline=None)
@given(_REASONING_TEXT, _LABELS, st.sampled_from(["think", "thinking", "reasoning", "THINK"]))
def test_reasoning_never_counts(reasoning, label, tag):
    # whatever the reasoning names, a clean Answer: line after it decides
    assert parse_answer(f"<{tag}>{reasoning}</{tag}>\nAnswer: {label}", BASIC) == ParsedAnswer(label, None)


@settings(max_examples=300, deadline=None)
@given(_REASONING_TEXT)
def test_unclosed_reasoning_is_no_answer(reasoning):
    assert parse_answer(f"<think>{reasoning}", BASIC) == ParsedAnswer(None, "no_answer")


_NON_ANSWERS = st.sampled_from(
    [
        "None of the above",
        "None",
        "N/A",
        "n/a",
        "Not applicable",
        "Insufficient information",
        "Insufficient Information",
        "Cannot be determined",
        "Unknown",
        "No correct answer",
        "None of the provided options are correct.",
        "A = NaCN, B = H3O+",
        "ABC",
        "DAB",
        "A and C",
        "A = H2O and B = HCl",
        "Not listed among the options",
    ]
)


@settings(max_examples=300, deadline=None)
@given(_REASONING_TEXT, _NON_ANSWERS)
def test_declared_non_answer_is_never_a_letter(reasoning, declared):
    result = parse_answer(f"{reasoning}\nAnswer: {declared}", BASIC)
    assert result.choice is None and result.reason in {"no_answer", "refusal", "ambiguous"}


_WRAPPERS = st.sampled_from(
    [
        "{}",
        "${}$",
        "$\\text{{{}}}$",
        "\\text{{{}}}",
        "\\( {} \\)",
        "\\(\\mathrm{{{}}}\\)",
        "**{}**",
        "$\\textbf{{{}}}$",
        "({})",
        "{})",
        "$ {} $",
    ]
)


@settings(max_examples=300, deadline=None)
@given(_REASONING_TEXT, _LABELS, _WRAPPERS)
def test_wrapping_the_letter_does_not_change_it(reasoning, label, wrapper):
    assert parse_answer(f"{reasoning}\nAnswer: {wrapper.format(label)}", BASIC) == ParsedAnswer(label, None)


@settings(max_examples=300, deadline=None)
@given(
    _REASONING_TEXT,
    _LABELS,
    st.sampled_from(
        [
            "Answer:",
            "Final answer:",
            "Correct Answer:",
            "Ответ:",
            "答案：",
            "Antwort:",
            "Réponse :",
            "Respuesta:",
            "**Answer:**",
        ]
    ),
)
def test_an_answer_line_in_any_language_decides(reasoning, label, word):
    assert parse_answer(f"{reasoning}\n{word} {label}", BASIC) == ParsedAnswer(label, None)


# --- the benchmark corpus of real completions (benchmarks/data/parse_corpus)
from tests.support import BENCHMARKS  # noqa: E402

_BENCH = BENCHMARKS / "bench_parse.py"


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_parse", _BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_corpus_is_well_formed():
    bench = _bench_module()
    lines = bench.CORPUS.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])["_header"]
    assert {"reading", "rules", "split", "source"} <= set(header)
    items = bench.read_corpus(bench.CORPUS)
    assert len(items) == len(lines) - 1 >= 300
    keys = {
        "id",
        "source_repo",
        "path",
        "commit",
        "line",
        "licence",
        "model",
        "run",
        "benchmark",
        "question_id",
        "labels",
        "style",
        "split",
        "expected_choice",
        "expected_reason",
        "text",
    }
    assert len({item["id"] for item in items}) == len(items)
    for item in items:
        assert set(item) == keys, item["id"]
        assert item["licence"] in {"MIT", "Apache-2.0", "CC-BY-4.0"}
        assert len(item["commit"]) == 40 and item["split"] in {"tune", "holdout", "late"}
        assert item["labels"] == sorted(set(item["labels"])) and item["text"]
        # exactly one of a letter among the options and an invalid reason the parser gives
        if item["expected_choice"] is not None:
            assert item["expected_reason"] is None and item["expected_choice"] in item["labels"]
        else:
            assert item["expected_reason"] in set(INVALID_REASONS) - {"request_failed", "truncated"}
    assert len({item["model"] for item in items}) >= 5


def test_corpus_agreement_meets_its_target():
    bench = _bench_module()
    results = bench.run(bench.read_corpus(bench.CORPUS))
    agree = sum(bench.expected(item) == got for item, got in results)
    wrong = [item["id"] for item, got in results if got.choice is not None and got.choice != item["expected_choice"]]
    assert wrong == []
    assert 100 * agree / len(results) >= bench.TARGET_AGREEMENT


@pytest.mark.parametrize(
    "text",
    [
        "(A) or (B) " * 20000,
        "Answer: ABCD " * 20000,
        "(85 K) " * 30000,
        "Answer: A\nAnswer: B\n" * 10000,
        "The answer is:\nA) x\n\n" * 10000,
        "<think>" * 10000 + "Answer: A",
        "xAnswer: " * 30000,
        "A)\n" * 50000,
    ],
)
def test_long_pathological_replies_parse_in_time(text):
    # each pattern is linear in the text (a quadratic one took a minute on the second of these)
    started = time.perf_counter()
    _assert_well_formed(parse_answer(text, BASIC), BASIC)
    assert time.perf_counter() - started < 10


@pytest.mark.parametrize(
    "text",
    [
        "Either (A) or (B), hard to say.",
        "Either (B) or (C).",
        "Perhaps (A), perhaps (C).",
    ],
)
def test_a_hedge_between_two_letters_is_ambiguous_not_the_second(text):
    """A letter in parentheses abbreviates the word before it only when that word starts with it
    ("Debye (D)"): "Either (A)" names option A, so the hedge names two."""
    assert parse_answer(text, BASIC) == ParsedAnswer(None, "ambiguous")


def test_the_simulators_invalid_texts_name_no_candidate():
    from molp2s_stats.simulate import INVALID_TEXTS

    for text in INVALID_TEXTS:
        assert parse_answer(text, BASIC).choice is None, text


def test_a_word_the_letter_abbreviates_is_not_an_option():
    assert parse_answer("The dipole in Debye (D) is 2.1; the answer is (B).", BASIC) == ParsedAnswer("B", None)
