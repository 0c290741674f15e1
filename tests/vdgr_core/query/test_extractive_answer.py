"""The offline answer keeps versions apart and quotes procedures whole, with exact citations."""
import re

from schemas.config import AnswerSettings
from vdgr_core.query.answer import extractive_answer, named_versions
from vdgr_core.query.answer_stage import AnswerStage
from vdgr_core.query.neutral import citations
from vdgr_core.query.result import Evidence
from vdgr_core.query.trace import TraceRecorder

Q = "How do I reset the Orbit X2 router to factory settings?"
V2 = ("A factory reset erases the Wi-Fi name, passwords, the Orbit app link and all settings.\n\n"
      "1. Press and hold the WPS button on the top for 5 seconds until the LED pulses white.\n"
      "2. Within 10 seconds, press the power button once to confirm.\n"
      "3. The LED turns solid white while the router restores its defaults (about 90 seconds).\n\n"
      "You can also reset from the app: Settings > System > Factory reset.")
V1 = ("A factory reset erases the Wi-Fi name, passwords and all settings.\n\n"
      "1. Leave the router powered on.\n"
      "2. Press and hold the RESET pinhole on the back with a paperclip for 10 seconds.\n"
      "3. Release it when the status LED blinks amber.")


def ev(text, version="", title="Factory reset", n=1):
    return Evidence(chunk_id=f"c{n}", domain="networking", version=version, source=f"doc{n}.md",
                    path=["Orbit X2 User Manual", title], title=title, text=text, score=1.0 / n, routes=["hybrid"])


def _parts(answer):
    return {m.group(1): m.group(2) for m in re.finditer(r"For (v[\d.]+): (.*?)(?=\n\nFor v|\Z)", answer, re.S)}


def test_two_versions_give_one_labelled_part_each_best_first():
    answer = extractive_answer(Q, [ev(V2, "2.0", n=1), ev(V1, "1.0", n=2)])
    assert answer.startswith("For v2.0: ")
    parts = _parts(answer)
    assert list(parts) == ["v2.0", "v1.0"]
    assert "WPS button" in parts["v2.0"] and "RESET pinhole" not in parts["v2.0"]
    assert "RESET pinhole" in parts["v1.0"] and "WPS" not in parts["v1.0"]


def test_citations_of_a_split_answer_point_at_their_versions_evidence():
    evidence = [ev(V2, "2.0", n=1), ev(V1, "1.0", n=2)]
    answer = extractive_answer(Q, evidence)
    cites = citations(answer, len(evidence))
    assert cites and {c.evidence for c in cites} == {1, 2}
    v1_start = answer.index("For v1.0:")
    for c in cites:
        assert answer[c.start:c.end] == f"[{c.evidence}]"
        assert evidence[c.evidence - 1].version == ("2.0" if c.start < v1_start else "1.0")


def test_the_procedure_is_quoted_whole_on_its_own_lines():
    answer = extractive_answer(Q, [ev(V2, "2.0")])
    steps = ("1. Press and hold the WPS button on the top for 5 seconds until the LED pulses white.\n"
             "2. Within 10 seconds, press the power button once to confirm.\n"
             "3. The LED turns solid white while the router restores its defaults (about 90 seconds). [1]")
    assert steps in answer
    assert "For v" not in answer          # one version: no labels


def test_a_question_naming_a_version_is_answered_from_that_version_only():
    answer = extractive_answer(Q.replace("router", "v1 router"), [ev(V2, "2.0", n=1), ev(V1, "1.0", n=2)])
    assert "RESET pinhole" in answer and "WPS" not in answer and "For v" not in answer
    assert named_versions("on hardware version 2", {"2.0", "1.0"}) == {"2.0"}
    assert named_versions("the Orbit X2 on 2.4 GHz", {"2.0", "1.0"}) == set()


def test_unversioned_evidence_is_not_split():
    answer = extractive_answer(Q, [ev(V2, "", n=1), ev(V1, "", n=2)])
    assert "For v" not in answer


def test_a_heading_is_never_an_answer_sentence():
    text = "Phone\n\nCall a number from the Phone app keypad."
    answer = extractive_answer("Phone", [ev(text, title="Calls")])
    assert answer == "Call a number from the Phone app keypad. [1]"


def test_the_command_line_is_in_the_answer_whole():
    text = ("The default editor is nano.\n\nTo change the default editor, run:\n\n"
            "sudo update-alternatives --config editor\n\nChoose the editor by its number.")
    answer = extractive_answer("How do I change the default editor?", [ev(text, title="Editors")])
    assert "To change the default editor, run:\nsudo update-alternatives --config editor [1]" in answer


def test_a_question_asking_for_a_command_is_answered_with_the_command_and_its_lead_in():
    # three prose sentences share as many of the question's words as the command line does and
    # come first: scored alone, the command line is left out of a three-sentence answer
    text = ("Creates virtual Python environments in one or more target directories.\n\n"
            "Running this command creates the target directory and places a pyvenv.cfg file in it pointing to the "
            "Python installation.\n\nA virtual environment is created on top of an existing Python installation.\n\n"
            "Creation of virtual environments is done by executing the command venv:\n\n"
            "python3 -m venv /path/to/new/virtual/environment")
    answer = extractive_answer("What command creates a new Python virtual environment in a given directory with the "
                               "venv module?", [ev(text, title="Creating virtual environments")])
    assert "Creation of virtual environments is done by executing the command venv:\n" \
           "python3 -m venv /path/to/new/virtual/environment [1]" in answer


def test_the_answer_stage_gives_the_split_answer_with_exact_citations():
    evidence = [ev(V2, "2.0", n=1), ev(V1, "1.0", n=2)]
    stage = AnswerStage(AnswerSettings(min_confidence=0.0))
    answer = stage.answer(Q, evidence, TraceRecorder(None))
    assert answer == extractive_answer(Q, evidence)
    assert [c.evidence for c in citations(answer, 2)] == [int(n) for n in re.findall(r"\[(\d)\]", answer)]


RECURSIVE = ("recursive-clients\nGrammar: recursive-clients <integer>;\nBlocks: options\n"
             "This sets the maximum number (a \"hard quota\") of simultaneous recursive lookups the server performs "
             "on behalf of clients. The default is 1000. Because each recursing client uses a fair bit of memory "
             "(on the order of 20 kilobytes), the value of the recursive-clients option may have to be decreased "
             "on hosts with limited memory. " + "It is a quota of the resolver. " * 20)


def test_an_entry_is_quoted_from_its_defining_lines_with_the_default_in_one_run():
    evidence = [ev(RECURSIVE, title="recursive-clients", n=1),
                ev("Caches keep answers. The cache holds clients too.", title="Caching", n=2)]
    answer = extractive_answer("What is the default limit on simultaneous recursive lookups for clients?", evidence)
    assert answer.startswith("recursive-clients\nGrammar: recursive-clients <integer>;\n"
                             "This sets the maximum number")
    assert "on behalf of clients. The default is 1000." in answer      # adjacent: one run, no citation between
    assert answer.count("[1]") == 1 and "[2]" not in answer


def test_a_short_entry_is_quoted_whole():
    text = "BG_NICE (-6) <C> <Z>\nRun all background jobs at a lower priority. This option is set by default."
    answer = extractive_answer("Are background jobs niced unless I change an option?",
                               [ev(text, title="BG_NICE (-6) <C> <Z>"), ev("Jobs run in the background.", n=2)])
    assert answer == text + " [1]"


def test_an_entry_whose_term_line_ends_with_its_title_is_quoted_without_the_title_again():
    # SQLite's pragma entries: titled "busy_timeout", their term line "PRAGMA busy_timeout"
    text = ("PRAGMA busy_timeout\n\nPRAGMA busy_timeout;\nPRAGMA busy_timeout = milliseconds;\n\n"
            "Query or change the setting of the busy timeout.")
    answer = extractive_answer("What does the busy_timeout pragma change?", [ev(text, title="busy_timeout")])
    assert answer.startswith("PRAGMA busy_timeout\n") and not answer.startswith("busy_timeout")


def test_prose_sections_are_not_entries():
    from vdgr_core.query.answer import is_definition

    assert not is_definition(ev("Call a number from the Phone app keypad.", title="Calls"))
    assert is_definition(ev("type | default | mandatory\ninteger | 10 | no\nPolling.", title="Interval"))
    assert is_definition(ev("Polls files.", title="PollingInterval"))


def test_a_keyword_whose_description_runs_on_in_its_line_is_an_entry_quoted_once():
    """haproxy's keyword lines carry the start of the description (``set weight <backend>/<server>
    <weight>[%] Change a server's weight ...``): the entry's head is that sentence, not the
    term line and then the same words again."""
    from vdgr_core.query.answer import is_definition

    text = ("set weight <backend>/<server> <weight>[%] Change a server's weight to the value passed in\n"
            "argument. Servers of a farm running a static algorithm cannot change their weight once set.\n"
            "A typical usage of this command is to disable a server during an update.")
    entry = ev(text + "\n" + "More about weights. " * 60, title="set weight <backend>/<server> <weight>[%]")
    assert is_definition(entry)
    assert not is_definition(ev("Installation is easy. Follow the steps below.", title="Installation"))
    answer = extractive_answer("How do I change a server's weight at runtime?",
                               [entry, ev("Servers of a farm share a static algorithm weight.", n=2)])
    assert answer.startswith("set weight <backend>/<server> <weight>[%] Change a server's weight to the value "
                             "passed in argument.")
    assert answer.count("set weight") == 1


def test_a_this_sentence_is_quoted_with_the_sentences_that_name_what_it_means():
    # a long entry whose list item runs on in one paragraph: "this algorithm" is leastconn
    intro = " ".join(f"The balance keyword sets algorithm number {i} of several for a backend." for i in range(12))
    text = ("balance <algorithm> [ <arguments> ]\n\nDefine the load balancing algorithm to be used in a backend.\n\n"
            f"{intro}\n\nroundrobin Each server is used in turns, according to their weights. "
            "leastconn The server with the lowest number of connections receives the connection. "
            "Round-robin is performed within groups of servers of the same load. "
            "Use of this algorithm is recommended where very long sessions are expected, such as LDAP or SQL.")
    answer = extractive_answer("Which balance algorithm is recommended for long sessions such as LDAP?",
                               [ev(text, title="balance <algorithm> [ <arguments> ]")])
    assert "leastconn The server with the lowest number of connections receives the connection." in answer
    assert "Use of this algorithm is recommended" in answer


def test_a_question_about_a_default_is_answered_from_the_entry_behind_prose():
    prose = "This sets up a TCP server on port 514 and permits it to accept up to 500 connections."
    entry = ("MaxSessions\n\ntype | default | mandatory\ninteger | 200 | no\n\n"
             "Sets the maximum number of sessions supported.")
    evidence = [ev(prose, title="TCP syslog", n=1), ev(entry, title="MaxSessions", n=2)]
    answer = extractive_answer("How many TCP sessions does the listener accept by default?", evidence)
    assert "integer | 200 | no" in answer and "[2]" in answer
    # a question asking for neither an option nor a default keeps the first item as its anchor
    answer = extractive_answer("How many TCP sessions does the listener accept?", evidence)
    assert answer.split(" [")[0].startswith("This sets up a TCP server")


def test_a_such_a_sentence_is_quoted_with_the_sentence_it_refers_to():
    text = ("detached HEAD\n\nNormally the HEAD stores the name of a branch, and commands operate on the history "
            "leading to the tip of that branch. However, Git also allows you to check out an arbitrary commit "
            "that is not the tip of any particular branch. The HEAD in such a state is called detached. "
            "Commands that build history still work while the HEAD is detached, and they update it.\n\n"
            + " ".join(f"Reflog entry {i} records where a branch pointed before command {i} moved it." for i in range(12)))
    assert len(text) > 700                      # not a short entry quoted whole
    answer = extractive_answer("What is a detached HEAD?", [ev(text, title="detached HEAD"),
                                                            ev("Heads are branches.", title="Heads", n=2)])
    assert "check out an arbitrary commit that is not the tip of any particular branch. The HEAD in such" in answer


def test_a_sentence_going_on_from_a_command_is_quoted_with_it_cited_once():
    text = ("A pathname component of the form (foo/)# matches zero or more directories.\n\n"
            "As a shorthand, **/ is equivalent to (*/)#. Thus:\n\n"
            "ls -ld -- **/bar\n\n"
            "does a recursive directory search for files named bar in every subdirectory. "
            "This form does not follow symbolic links.")
    answer = extractive_answer("How do I search recursively through subdirectories for files named bar?",
                               [ev(text, title="Recursive Globbing")])
    # the command is the subject of the sentence: one quote, one citation after the sentence
    assert "ls -ld -- **/bar\ndoes a recursive directory search for files named bar" in answer
    assert "**/bar [1]" not in answer
    # a sentence in upper case does not pull in the block before it
    text2 = text.replace("does a recursive", "It does a recursive")
    answer2 = extractive_answer("How do I search recursively through subdirectories for files named bar?",
                                [ev(text2, title="Recursive Globbing")])
    assert "ls -ld -- **/bar\nIt does" not in answer2


def test_a_continuing_sentence_brings_the_whole_block_paragraph():
    text = ("Lets assume you want at most 100 MB of logs. Putting the following directive\n\n"
            "# outchannel definition\n$outchannel rotation,/var/log/rot.log, 52428800,/usr/local/bin/rotate\n"
            "# log everything to it\n*.* :omfile:$rotation\n\n"
            "to rsyslog.conf makes rsyslog rotate the log file once it reaches 50 MB in size.")
    answer = extractive_answer("How do I rotate a log file once it reaches 50 MB in size?",
                               [ev(text, title="Output channels")])
    # every line of the block (one of them reads like a sentence), then the sentence: one quote,
    # one citation (the sentence before the block may be quoted on its own)
    assert "$outchannel rotation,/var/log/rot.log, 52428800,/usr/local/bin/rotate" in answer
    assert "*.* :omfile:$rotation\nto rsyslog.conf makes rsyslog rotate" in answer
    assert answer.split("Putting the following directive")[1].count("[1]") == 1


HTTPCHK = ("option httpchk <method> <uri>\n\nEnables HTTP protocol to check on the servers health\n\n"
           "Arguments :\n\n<method> is the optional HTTP method used with the requests. When not set, the "
           "\"OPTIONS\" method is used, as it generally requires low server processing.\n\n"
           "<uri> is the URI referenced in the HTTP requests. It defaults to \"/\" which is accessible "
           "on almost any server.\n\n"
           "By default, server health checks only consist in trying to establish a TCP connection. When "
           "\"option httpchk\" is specified, a complete HTTP request is sent once the TCP connection is "
           "established, and responses 2xx and 3xx are considered valid, while all other ones indicate a "
           "server failure, including the lack of any response. Combined with other directives, it is "
           "possible to customize the request sent during the HTTP health checks or the matching rules on "
           "the response. The server configuration is used by default to open connections to perform "
           "HTTP health checks, and health checks of HTTP servers run on the server's own port.")


def test_a_question_about_a_default_gets_the_sentence_stating_that_default():
    assert len(HTTPCHK) > 700                       # not a short entry quoted whole
    evidence = [ev(HTTPCHK, title="option httpchk <method> <uri>"), ev("Health checks run often.", n=2)]
    answer = extractive_answer("When HTTP health checks are enabled without specifying a method, which HTTP "
                               "method do the check requests use?", evidence)
    assert 'When not set, the "OPTIONS" method is used' in answer
    # the question's argument decides which of the entry's defaults is stated
    answer = extractive_answer("Which URI do HTTP health checks request unless I set one?", evidence)
    assert 'It defaults to "/"' in answer and "OPTIONS" not in answer
    # other ways of asking what holds when nothing was set
    for q in ("Which method do HTTP health checks use if no method has been specified?",
              "Which HTTP method do health checks send when started without a method argument?"):
        assert 'When not set, the "OPTIONS" method is used' in extractive_answer(q, evidence), q
    # a question that is not about a default is answered as before: no default sentence forced in
    answer = extractive_answer("Which HTTP method can health checks use?", evidence)
    assert "When not set" not in answer


ACLS = ("HAProxy has pattern matching. Technically, ACLs are built on the same core as the maps, they "
        "share the exact same internal structure, pattern matching methods and performance. The only real "
        "difference is that instead of returning a sample, they only return \"found\" or \"not found\".\n\n"
        "Maps are loaded from files at start-up and can be updated at run time from the CLI.")
SEE = "See the configuration manual, chapter \"Using ACLs\", to understand ACLs and maps."


def test_the_sentence_after_the_best_one_is_quoted_with_it():
    evidence = [ev(ACLS, title="ACLs and maps"), ev(SEE, title="Maps", n=2), ev(SEE, title="More", n=3)]
    answer = extractive_answer("What is the difference between an ACL and a map?", evidence)
    assert "Technically, ACLs are built on the same core as the maps" in answer
    assert 'The only real difference is that instead of returning a sample' in answer


def test_a_sentence_two_items_repeat_is_quoted_once():
    evidence = [ev(SEE, title="Maps"), ev(SEE, title="More", n=2), ev(ACLS, title="ACLs and maps", n=3)]
    answer = extractive_answer("Where do I read about ACLs and maps?", evidence)
    assert answer.count("See the configuration manual") == 1


GLOSSARY = ("fast-forward\nA fast-forward is a special type of merge where you have a revision and you are "
            "merging another branch's changes that happen to be a descendant of what you have. In such a case, "
            "you do not make a new merge commit but instead just update your branch to point at the same revision.")
MERGES = ("Normally, a merge results in a merge commit, with two parents. However, if the current branch is an "
          "ancestor of the other, Git just performs a fast-forward merge; the head of the current branch is moved "
          "forward without any new merge commit being created. A fast-forward merge is common when you pull.")


def test_a_question_asking_what_something_is_is_answered_from_the_sentence_defining_it():
    evidence = [ev(MERGES, title="Fast-forward merges"), ev(GLOSSARY, title="fast-forward", n=2)]
    answer = extractive_answer("What does a fast-forward merge mean, and does it create a merge commit?", evidence)
    assert "A fast-forward is a special type of merge" in answer
    assert "you do not make a new merge commit" in answer        # the sentence after it


def test_a_next_sentence_that_adds_no_question_word_leaves_its_place_to_another_items_fact():
    # a multi-hop question: the next sentence of the best one only repeats its words; the place
    # goes to the other item's sentences, the answer ("Rocky Mountains") among them
    first = ("Norris Mountain is located in the Lewis Range, in the state of Montana. It is situated along "
             "the Continental Divide, near another mountain.")
    second = ("The Rocky Mountain Front and its island range mark the landscape. "
              "Geologically, most of the state's mountain range lies within the Rocky Mountains.")
    evidence = [ev(first, title="Norris Mountain"), ev(second, title="Montana", n=2)]
    answer = extractive_answer("To which group of mountains does the range of Norris Mountain belong?", evidence)
    assert "located in the Lewis Range" in answer and "lies within the Rocky Mountains" in answer
    assert "Continental Divide" not in answer


LOOP = ("Each partition of the disk image containing multiple partitions can be mounted by using "
        "the loop device. Since the loop device does not manage partitions by default, we need to "
        "reset it as follows.\n\n"
        "# rmmod loop\n# modprobe loop max_part=16\n\n"
        "Now the loop device can manage up to 16 partitions.")
MOUNT = "A single partition image is mounted with the loop device and a mount point of its own."


def test_a_how_to_answer_quotes_the_procedure_its_best_sentence_leads_into():
    q = "How do I mount each partition of a disk image with the loop device?"
    answer = extractive_answer(q, [ev(LOOP, title="Mounting"), ev(MOUNT, title="Images", n=2)])
    assert "mounted by using the loop device" in answer
    # the lead-in sentence, then the commands under it, on their own lines, cited
    assert "reset it as follows.\n# rmmod loop\n# modprobe loop max_part=16 [1]" in answer


SESSION = ("Each partition of the disk image can be mounted by using the loop device. Since the loop "
           "device does not manage partitions by default, we need to reset it as follows.\n\n"
           "# modinfo -p loop # verify kernel capability\n"
           "max_part:Maximum number of partitions per loop device\n"
           "# losetup -a # verify nothing using the loop device\n"
           "# rmmod loop\n# modprobe loop max_part=16\n\n"
           "Now the loop device can manage up to 16 partitions.")


def test_a_procedure_that_is_a_terminal_session_is_quoted_whole():
    # the session is cut into command lines and their output; the procedure is all of them,
    # not its first command alone
    q = "How do I get the loop device to expose each partition of a disk image?"
    answer = extractive_answer(q, [ev(SESSION, title="Mounting"), ev(MOUNT, title="Images", n=2)])
    assert "reset it as follows.\n# modinfo -p loop" in answer
    assert "max_part:Maximum number of partitions" in answer
    assert answer.index("# rmmod loop") < answer.index("# modprobe loop max_part=16")
    assert "Now the loop device" not in answer          # the next paragraph is no part of it


QUEUES = ("Jobs of one priority level are taken in the order they were queued. "
          "Within one priority level the scheduler runs the job queued first. "
          "A later job of the same priority level runs next once the earlier ones are done.")
RANDOM = "Several jobs in one priority level: the scheduler picks at random."


def test_an_entry_question_is_answered_from_the_first_item_before_a_later_items_closer_words():
    # the third item's sentence holds one question word more than the first item's weakest
    # (0.6 against 0.5); for an entry question the first item's units keep the budget
    evidence = [ev(QUEUES, title="Queues"), ev("Printers are shared on the network.", title="Printers", n=2),
                ev(RANDOM, title="Notes", n=3)]
    answer = extractive_answer("Which setting decides the queued job the scheduler runs next when several "
                               "jobs share one priority level?", evidence)
    assert "taken in the order they were queued. [1]" in answer and "runs next once" in answer
    assert "at random" not in answer
    # a question of another shape may need a fact from each of several items: the light bonus
    answer = extractive_answer("Which queued job does the scheduler run next when several jobs share one "
                               "priority level?", evidence)
    assert "picks at random. [3]" in answer


BACKTRACE = ("The backtrace can be obtained by gdb using one of the following approaches:\n\n"
             "- Update the limits file to include the following:\n\n"
             "* soft core unlimited\n\n"
             "- Type \"ulimit -c unlimited\" to the shell prompt.\n\n"
             "- Crash the program to produce a core dump file.\n\n"
             "- Load the core dump file into gdb.\n\n"
             "For an infinite loop, press Ctrl-C to crash the program.")


def test_a_how_to_quotes_the_whole_loose_list_of_a_step_it_picks():
    # a list whose items are paragraphs of their own (HTML <li><p>): one picked step brings its list
    q = "How do I get a core dump and a backtrace of a crashed program?"
    answer = extractive_answer(q, [ev(BACKTRACE, title="Obtaining backtrace")])
    assert "- Crash the program to produce a core dump file." in answer
    assert '- Type "ulimit -c unlimited" to the shell prompt.' in answer
    assert "* soft core unlimited" in answer and "- Load the core dump file into gdb." in answer
    # not a how-to: the step alone
    answer = extractive_answer("Does crashing a program produce a core dump file?", [ev(BACKTRACE, title="Obtaining backtrace")])
    assert "produce a core dump file" in answer and "ulimit" not in answer


def test_a_unit_holding_no_question_word_answers_nothing_under_the_larger_rank_bonus():
    # the first item's bonus alone (0.2 for a how-to) is no reason to quote a sentence
    q = "How do I rotate the server logs every night?"
    answer = extractive_answer(q, [ev("The logs of the server are kept in one folder. Printers are shared "
                                      "on the network.", title="Logs")])
    assert "kept in one folder" in answer and "Printers" not in answer


def test_a_question_that_is_no_how_to_does_not_take_the_procedure():
    q = "Can each partition of a disk image be mounted by using the loop device?"
    answer = extractive_answer(q, [ev(LOOP, title="Mounting"), ev(MOUNT, title="Images", n=2)])
    assert "mounted by using the loop device" in answer
    assert "modprobe" not in answer
