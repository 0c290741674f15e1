"""Evidence text as answer units: sentences across line breaks, blocks whole, no headings."""
import re

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import FUZZ, watchdog
from vdgr_core.query.answer_units import MAX_BLOCK_LINES, answer_units

RESET = ("A factory reset erases all settings.\n\n"
         "1. Press and hold the WPS button for 5 seconds until the LED pulses\n"
         "white.\n"
         "2. Within 10 seconds, press the power button once to confirm.\n\n"
         "You can also reset from the app.")


def _kinds(text, titles=()):
    return [(u.kind, u.text) for u in answer_units(text, titles)]


def test_numbered_steps_are_one_unit_with_wrapped_lines_joined():
    units = answer_units(RESET)
    assert [u.kind for u in units] == ["sentence", "steps", "sentence"]
    steps = units[1]
    assert steps.text == ("1. Press and hold the WPS button for 5 seconds until the LED pulses white.\n"
                          "2. Within 10 seconds, press the power button once to confirm.")
    assert steps.lead == "A factory reset erases all settings."


def test_bulleted_steps_after_a_colon_are_quoted_with_their_lead():
    units = answer_units("To pair a headset:\n- Open Bluetooth.\n- Tap the headset.")
    assert [u.kind for u in units] == ["sentence", "steps"]
    assert units[1].quoted() == "To pair a headset:\n- Open Bluetooth.\n- Tap the headset."


def test_sentences_are_not_cut_at_source_line_breaks():
    text = ("This manual covers the Orbit X2 tri-band Wi-Fi 6 router, hardware version 2 (model\n"
            "SKU-90214-B), running firmware 2.x. Hardware version 2 has no RESET pinhole: resets use\n"
            "the button combination below.")
    assert _kinds(text) == [
        ("sentence", "This manual covers the Orbit X2 tri-band Wi-Fi 6 router, hardware version 2 "
                     "(model SKU-90214-B), running firmware 2.x."),
        ("sentence", "Hardware version 2 has no RESET pinhole: resets use the button combination below.")]


def test_headings_are_never_units():
    text = "Phone\n\nCall a number from the keypad.\n\nContacts\nAdd a contact from the Phone app."
    assert _kinds(text) == [("sentence", "Call a number from the keypad."),
                            ("sentence", "Add a contact from the Phone app.")]
    # a heading between sentences of one block (PDF text)
    assert _kinds("Dial from the keypad.\nPhone\nCall a number from the log.") == [
        ("sentence", "Dial from the keypad."), ("sentence", "Call a number from the log.")]
    # the section's own title, even when it reads like a sentence
    assert _kinds("Factory reset.\n\nHold WPS for 5 seconds.", ["Factory reset."]) == [
        ("sentence", "Hold WPS for 5 seconds.")]


def test_a_url_line_is_not_a_heading():
    assert _kinds("For support, visit:\n\nsupport.example.com/pay") == [
        ("sentence", "For support, visit:"), ("sentence", "support.example.com/pay")]


def test_table_rows_are_whole_units_led_by_the_header():
    units = answer_units("LED | Meaning\nSolid white | Connected\nPulsing white | Waiting for reset confirmation")
    assert [(u.kind, u.text, u.lead) for u in units] == [
        ("row", "Solid white | Connected", "LED | Meaning"),
        ("row", "Pulsing white | Waiting for reset confirmation", "LED | Meaning")]


def test_a_command_line_is_whole_and_led_by_its_sentence():
    text = "To change the default editor, run:\n\nsudo update-alternatives --config editor\n\nThen pick one."
    units = answer_units(text)
    assert [u.kind for u in units] == ["sentence", "command", "sentence"]
    assert units[1].text == "sudo update-alternatives --config editor"
    assert units[1].quoted() == "To change the default editor, run:\nsudo update-alternatives --config editor"


def test_root_prompt_commands_are_one_block():
    units = answer_units("Install them by the following.\n\n# apt-get update\n# apt-get install mc vim")
    assert [(u.kind, u.text) for u in units] == [
        ("sentence", "Install them by the following."), ("command", "# apt-get update\n# apt-get install mc vim")]


def test_a_code_line_alone_is_a_command_not_a_heading():
    text = ("Git can find a commit by a regular expression on its message:\n\n"
            "git show :/'as revision 23456'\n\nwill show the converted changeset.")
    units = answer_units(text)
    assert [(u.kind, u.text) for u in units] == [
        ("sentence", "Git can find a commit by a regular expression on its message:"),
        ("command", "git show :/'as revision 23456'"), ("sentence", "will show the converted changeset.")]


def test_a_wrapped_line_of_prose_with_a_quote_stays_prose():
    text = ('The only real difference is that instead of returning a sample, they only return "found" or\n'
            '"not found" to the caller.')
    assert [u.kind for u in answer_units(text)] == ["sentence"]


def test_an_interactive_session_is_one_block_not_a_table():
    text = "Connect and count the rows:\n\n>>> con = sqlite3.connect(\"t.db\")\n>>> cur = con.execute(\"SELECT 1\")\n" \
           ">>> cur.fetchone()\n(1,)"
    units = answer_units(text)
    assert [u.kind for u in units] == ["sentence", "lines"]
    assert units[1].text.splitlines()[0] == '>>> con = sqlite3.connect("t.db")'
    assert units[1].quoted().startswith("Connect and count the rows:\n>>> con")


def test_a_long_list_is_cut_between_items_never_inside_one():
    items = [f"{i}. Step number {i} of the long procedure." for i in range(1, MAX_BLOCK_LINES + 4)]
    units = answer_units("\n".join(items))
    assert len(units) == 2 and all(u.kind == "steps" for u in units)
    assert [ln for u in units for ln in u.text.split("\n")] == items


_PIECES = st.sampled_from(["\n", "\n\n", "1. ", "- ", " | ", "$ ", "# ", "(", ")", ".", ":", " ", "Press",
                           "the", "button", "LED", "sudo", "--config", "Phone", "a", "b.c/d"])


@FUZZ
@given(st.lists(_PIECES, max_size=60).map("".join))
def test_every_unit_line_is_quoted_from_the_text(text):
    """Units only regroup the text: every line of every unit (whitespace collapsed) is in it."""
    def norm(s):
        return re.sub(r"\s+", " ", s).strip()

    with watchdog():
        units = answer_units(text, ["Phone"])
    source = norm(text)
    for u in units:
        assert u.text.strip()
        for line in u.quoted(True).split("\n"):
            assert norm(line) in source
