"""The terminal front end of the REPL (prompt-toolkit)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from harnpy.repl.complete import complete
from harnpy.repl.core import ReplCore, ReplExit
from harnpy.repl.history import HistoryFile
from harnpy.repl.scan import INDENT, indent_for, is_complete, scan

PROMPT = "harn> "
CONTINUATION = "  ... "


def run_interactive(
    core: ReplCore,
    *,
    input: Any = None,
    output: Any = None,
    history_path: str | None = None,
    banner: bool = True,
) -> int:
    """The prompt-toolkit REPL (``input``/``output`` let tests drive it with a pipe input
    and a dummy output)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.filters import completion_is_selected
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.history import History
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.lexers import PygmentsLexer
    from prompt_toolkit.output import ColorDepth
    from prompt_toolkit.styles import Style

    from harnpy.highlight import HarnLexer

    warnings: list[str] = []
    hist_file = HistoryFile(history_path, warnings.append)

    class _History(History):
        def __init__(self) -> None:
            super().__init__()
            # Loaded now (not in prompt-toolkit's background task): warnings about the
            # file come before the first prompt, and Up works from the first key press.
            self._loaded_strings = list(reversed(hist_file.load()))
            self._loaded = True

        def load_history_strings(self) -> Iterable[str]:
            return list(self._loaded_strings)

        def store_string(self, string: str) -> None:
            hist_file.store(string)

    class _Completer(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterator[Any]:
            for c in complete(core.session, document.text_before_cursor):
                yield Completion(c.text, start_position=c.start, display_meta=c.meta)

    kb = KeyBindings()
    has_selected = completion_is_selected

    @kb.add("enter", filter=has_selected)
    def _accept_completion(event: Any) -> None:
        buf = event.current_buffer
        buf.apply_completion(buf.complete_state.current_completion)

    @kb.add("enter", filter=~has_selected)
    def _enter(event: Any) -> None:
        buf = event.current_buffer
        text = buf.text
        if not text.strip() or is_complete(text):
            buf.validate_and_handle()
        else:
            buf.insert_text("\n" + indent_for(buf.document.text_before_cursor))

    def _closer(ch: str) -> Callable[[Any], None]:
        def handler(event: Any) -> None:
            buf = event.current_buffer
            before = buf.document.current_line_before_cursor
            if before and not before.strip():
                depth = scan(buf.document.text_before_cursor).depth
                buf.delete_before_cursor(len(before))
                buf.insert_text(INDENT * max(0, depth - 1))
            buf.insert_text(ch)

        return handler

    for ch in "})]":
        kb.add(ch)(_closer(ch))

    @kb.add("tab")
    def _tab(event: Any) -> None:
        buf = event.current_buffer
        before = buf.document.current_line_before_cursor
        if not before.strip():
            buf.insert_text(INDENT)
            return
        if buf.complete_state:
            buf.complete_next()
            return
        # Like readline: a single candidate is inserted at once, several insert their
        # common prefix and open the menu.
        cands = complete(core.session, buf.document.text_before_cursor)
        if not cands:
            return
        start = cands[0].start
        common = os.path.commonprefix([c.text for c in cands])
        if all(c.start == start for c in cands) and len(common) > -start:
            buf.delete_before_cursor(-start)
            buf.insert_text(common)
        if len(cands) > 1:
            buf.start_completion(select_first=False)

    style = Style.from_dict(
        {
            "prompt": "ansigreen bold",
            "continuation": "ansibrightblack",
        }
    )

    def continuation(width: int, line_number: int, is_soft_wrap: int) -> Any:
        return FormattedText([("class:continuation", CONTINUATION.rjust(width))])

    color_depth = ColorDepth.MONOCHROME if os.environ.get("NO_COLOR") else None
    prompt: PromptSession[str] = PromptSession(
        message=FormattedText([("class:prompt", PROMPT)]),
        multiline=True,
        prompt_continuation=continuation,
        lexer=PygmentsLexer(HarnLexer),
        completer=_Completer(),
        complete_while_typing=False,
        history=_History(),
        auto_suggest=AutoSuggestFromHistory(),
        key_bindings=kb,
        style=style,
        include_default_pygments_style=True,
        color_depth=color_depth,
        input=input,
        output=output,
        enable_open_in_editor=True,
    )
    if banner:
        from harnpy import __version__

        core.say(f"Harn REPL v{__version__} (harnpy)")
        core.say(
            "Enter expressions or statements; :help lists the commands. Ctrl-C discards an "
            "entry, Ctrl-D exits."
        )
    while True:
        core.end_line()
        for w in warnings:
            core._err(f"warning: {w}\n")
        warnings.clear()
        try:
            text = prompt.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:
            if banner:
                core.say("Goodbye!")
            break
        core.last_char = "\n"
        try:
            with _quiet_ctrl_c(input):
                core.handle(text)
        except KeyboardInterrupt:
            core.error("interrupted")
        except ReplExit as e:
            return e.code
    core.end_line()
    return core.exit_status()


@contextlib.contextmanager
def _quiet_ctrl_c(input: Any) -> Iterator[None]:
    """While an entry runs on a real terminal, keep the terminal from echoing ``^C`` (the
    program's ``finally`` output and the ``interrupted`` notice then start their lines)."""
    try:
        import termios
    except ImportError:  # not a POSIX terminal
        yield
        return
    saved = None
    fd = -1
    if input is None:
        try:
            if sys.stdin.isatty():
                fd = sys.stdin.fileno()
                saved = termios.tcgetattr(fd)
                quiet = list(saved)
                quiet[3] &= ~termios.ECHOCTL
                termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except (AttributeError, ValueError, OSError, termios.error):
            saved = None
    try:
        yield
    finally:
        if saved is not None:
            try:
                termios.tcsetattr(fd, termios.TCSANOW, saved)
            except (OSError, termios.error):
                pass
