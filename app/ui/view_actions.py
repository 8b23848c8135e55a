"""Handlers of the actions on the screen itself: the inspector and its panels, the chat, help, copy, quit.

Each is `handler(app, arg)` registered in `app.ui.actions`.
"""

from __future__ import annotations

from app.config import config_path
from app.ui.actions import Host, handles


@handles("panel")
def panel(app: Host, name: str) -> None:
    names = app.panel_names()
    if name in names:
        app.action_panel(names.index(name) + 1)


@handles("toggle_inspector")
def toggle_inspector(app: Host, _arg: str) -> None:
    app.action_toggle_inspector()


@handles("widen_inspector")
def widen_inspector(app: Host, _arg: str) -> None:
    app.action_widen_inspector()


@handles("jump_latest")
def jump_latest(app: Host, _arg: str) -> None:
    app.action_jump_latest()


@handles("find")
async def find(app: Host, text: str) -> None:
    said = await app.chat.find(text)
    app.notify(said, title="find", timeout=6)


@handles("copy_last")
def copy_last(app: Host, _arg: str) -> None:
    app.copy(app.chat_last_answer(), "the last answer")


@handles("help")
def show_help(app: Host, _arg: str) -> None:
    app.action_help()


@handles("quit")
async def quit_app(app: Host, _arg: str) -> None:
    await app.action_quit()


def open_help(app: Host) -> None:
    """F1: help for the focused pane, every key (as the keymap has it), the commands and the lab grammar."""
    from textual.binding import Binding

    from app.ui.screens.help import HelpScreen, help_markdown

    focused_help = ""
    node = app.focused
    while node is not None:
        if getattr(node, "HELP", None):
            focused_help = node.HELP
            break
        node = node.parent
    bindings = []
    seen = set()
    for node in (app, app.chat, app.prompt):
        for item in type(node).BINDINGS:
            if isinstance(item, Binding) and item.id and item.id not in seen and item.description:
                seen.add(item.id)
                bindings.append((app._keymap.get(item.id, item.key), item.description, item.tooltip, item.id))
    grammar = ""
    if app.session is not None and app.session.info().provider == "lab":
        from app.lab.model import GRAMMAR

        grammar = GRAMMAR
    app.refresh_custom_commands()
    commands = [
        (c.slash + (f" {c.argument_hint}" if c.argument_hint else ""), c.description, c.source)
        for c in app.custom_commands
    ]
    rules = (
        [(rule.kind, rule.rule, rule.source) for rule in app.session.permissions().rules]
        if app.session is not None
        else []
    )
    app.push_screen(
        HelpScreen(
            help_markdown(
                focused_help=focused_help,
                bindings=bindings,
                lab_grammar=grammar,
                keymap_file=str(config_path()),
                custom_commands=commands,
                permissions=rules,
                approval_mode=app.settings.approval,
            )
        )
    )
