"""The public API without a daemon: one module per API sharing one Options, durations in seconds,
the socket path as `path=`, and reports through `logging`, never print()."""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import inspect
import logging
import math
import re
import unittest
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import jetfan
import jetfan.aio
import jetfan.blocking
from jetfan import _codec

PACKAGE = Path(jetfan.__file__).resolve().parent


class OneOptions(unittest.TestCase):
    def test_both_apis_take_the_fields_of_one_options(self) -> None:
        fields = [f.name for f in dataclasses.fields(jetfan.Options)]
        self.assertEqual(fields[:2], ["path", "handler"])
        for name in ("concurrency", "reconnect", "reconnect_delay", "max_reconnect_delay", "connect_timeout",
                     "handshake_timeout", "close_timeout"):
            self.assertIn(name, fields)
        # Neither entry point repeats them: an Options, and its fields as keyword arguments.
        for entry in (jetfan.connect, jetfan.BlockingHandler.__init__):
            with self.subTest(entry.__qualname__):
                params = inspect.signature(entry).parameters
                self.assertEqual([p for p in params if p != "self"], ["options", "fields"])
                self.assertEqual(params["fields"].kind, inspect.Parameter.VAR_KEYWORD)

    def test_options_check_what_they_are_given(self) -> None:
        o = jetfan.Options(path="/run/jetfan/b.sock", handler="builder", reconnect_delay=0.5)
        self.assertEqual(jetfan.Options.of(o, {"close_timeout": 2}).close_timeout, 2)
        self.assertIs(jetfan.Options.of(o, {}), o)
        for bad in ({"reconnect_delay": -1}, {"connect_timeout": math.inf}, {"close_timeout": "1"},
                    {"concurrency": 0}, {"concurrency": 2.0}, {"handler": "two words"}, {"path": ""}):
            with self.subTest(bad), self.assertRaises((ValueError, TypeError)):
                dataclasses.replace(o, **bad)  # type: ignore[arg-type]

    def test_the_socket_is_path_and_the_old_names_say_so(self) -> None:
        with self.assertRaisesRegex(TypeError, r"'socket'.*path="):
            jetfan.BlockingHandler(socket="/x.sock", handler="builder")
        with self.assertRaisesRegex(TypeError, r"'socket'.*path="):
            asyncio.run(jetfan.connect(socket="/x.sock", handler="builder"))
        with self.assertRaisesRegex(TypeError, r"'log'.*logging"):
            jetfan.BlockingHandler(path="/x.sock", handler="builder", log=print)
        with self.assertRaisesRegex(TypeError, "path"):
            jetfan.BlockingHandler(handler="builder")
        self.assertEqual(jetfan.JetfanError("no", "/x.sock").path, "/x.sock")


class Snippets(unittest.TestCase):
    def test_readme_and_examples_use_the_options_as_they_are(self) -> None:
        # Every connect(), BlockingHandler() and Options() call in the README's snippets, the bench
        # handler and the example handler passes only fields of Options (path=, not socket=).
        fields = {f.name for f in dataclasses.fields(jetfan.Options)}
        readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
        sources = re.findall(r"```python\n(.*?)```", readme, re.S)
        sources += [(PACKAGE.parent / "bench_handler.py").read_text(encoding="utf-8")]
        example = PACKAGE.parents[2] / "examples" / "handler.py"  # the repository's, when there is one
        if example.exists():
            sources.append(example.read_text(encoding="utf-8"))
        calls = 0
        for source in sources:
            tree = compile(source, "<snippet>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in (
                    "connect", "BlockingHandler", "Options"
                ):
                    calls += 1
                    names = {k.arg for k in node.keywords if k.arg is not None}
                    self.assertLessEqual(names, fields, ast.unparse(node))
        self.assertGreaterEqual(calls, 5)


class Durations(unittest.TestCase):
    def test_the_encoder_turns_seconds_into_the_wire_s_milliseconds(self) -> None:
        cases = [(1.5, b"NAK 7 1500\r\n"), (0, b"NAK 7 0\r\n"), (2, b"NAK 7 2000\r\n"), (0.001, b"NAK 7 1\r\n"),
                 (1.005, b"NAK 7 1005\r\n"), (0.0004, b"NAK 7 0\r\n"), (Decimal("0.25"), b"NAK 7 250\r\n"),
                 (Fraction(2**64 - 1, 1000), b"NAK 7 18446744073709551615\r\n"), (None, b"NAK 7\r\n")]
        for delay, line in cases:
            with self.subTest(delay):
                self.assertEqual(_codec.encode_nak(7, delay), line)
        for bad in (-0.001, math.nan, math.inf, Fraction(2**64, 1000), Decimal("NaN")):
            with self.subTest(bad), self.assertRaises(ValueError):
                _codec.encode_nak(7, bad)
        for bad in (True, "1", b"1"):
            with self.subTest(bad), self.assertRaises(TypeError):
                _codec.encode_nak(7, bad)  # type: ignore[arg-type]

    def test_nak_and_its_exception_take_seconds(self) -> None:
        params = inspect.signature(jetfan.Message.nak).parameters
        self.assertEqual(list(params), ["self", "delay", "reason"])
        self.assertEqual(params["reason"].kind, inspect.Parameter.KEYWORD_ONLY)
        self.assertEqual(params["reason"].default, "")
        self.assertEqual(jetfan.Nak(1.5).delay, 1.5)
        self.assertEqual((jetfan.Nak(1.5).reason, jetfan.Nak(None, "busy").reason), ("", "busy"))
        with self.assertRaises(ValueError):
            jetfan.Nak(-1)
        for doc in (jetfan.Message.nak.__doc__, jetfan.Nak.__doc__, jetfan.Options.__doc__):
            self.assertIn("second", doc or "")


class NakReasons(unittest.TestCase):
    def test_a_reason_is_written_from_version_3_on(self) -> None:
        self.assertEqual(_codec.VERSION, 3)
        self.assertEqual(jetfan.Options(path="/x.sock", handler="b").protocol_version, 3)
        cases = [(None, "", b"NAK 7\r\n", b"NAK 7\r\n"),
                 (None, "down", b"NAK 7 - down\r\n", b"NAK 7\r\n"),
                 (1.5, "down", b"NAK 7 1500 down\r\n", b"NAK 7 1500\r\n"),
                 (0, "a\rb\n", b"NAK 7 0 a b \r\n", b"NAK 7 0\r\n")]
        for delay, reason, v3, before in cases:
            with self.subTest(delay=delay, reason=reason):
                self.assertEqual(_codec.encode_nak(7, delay, reason, 3), v3)
                self.assertEqual(_codec.encode_nak(7, delay, reason, 2), before)
                self.assertEqual(_codec.encode_nak(7, delay, reason, 1), before)
        with self.assertRaises(TypeError):
            _codec.encode_nak(7, None, b"down", 3)  # type: ignore[arg-type]

    def test_a_long_reason_is_cut_to_fit_the_line_and_any_text_is_sent(self) -> None:
        for delay in (None, Fraction(2**64 - 1, 1000)):
            line = _codec.encode_nak(2**64 - 1, delay, "\u00e9" * 1000, 3)
            self.assertLessEqual(len(line), _codec.MAX_COMMAND_LINE)
            self.assertGreater(len(line), _codec.MAX_COMMAND_LINE - 2)
            line.decode("utf-8")  # cut between characters
        # A lone surrogate (an exception's text may hold one) is sent as "?", never raised.
        self.assertEqual(_codec.encode_nak(7, None, "x\ud800y", 3), b"NAK 7 - x?y\r\n")


class Modules(unittest.TestCase):
    def test_one_module_per_api_and_neither_imports_the_other(self) -> None:
        self.assertIs(jetfan.connect, jetfan.aio.connect)
        self.assertIs(jetfan.Handler, jetfan.aio.Handler)
        self.assertIs(jetfan.BlockingHandler, jetfan.blocking.BlockingHandler)
        self.assertEqual(sorted(p.name for p in PACKAGE.glob("*.py")), [
            "__init__.py", "_codec.py", "_errors.py", "_headers.py", "_message.py", "_options.py", "_outcome.py",
            "_publish.py", "aio.py", "blocking.py",
        ])
        for module, other in (("aio", "blocking"), ("blocking", "aio")):
            tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
            imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            self.assertNotIn(other, imported)

    def test_no_class_reaches_into_another_object_s_private_fields(self) -> None:
        # Inside a class, `x._name` is only for x = self (or cls): a connection does not touch its
        # handler's or a message's private state, nor they its.
        for path in sorted(PACKAGE.glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
                for node in ast.walk(cls):
                    if (
                        isinstance(node, ast.Attribute)
                        and node.attr.startswith("_")
                        and not node.attr.startswith("__")
                        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                    ):
                        self.fail(f"{path.name}:{node.lineno}: {cls.name} uses {ast.unparse(node)}")

    def test_the_package_is_typed(self) -> None:
        self.assertTrue((PACKAGE / "py.typed").exists())
        for fn in (jetfan.connect, jetfan.Message.nak, jetfan.Handler.process, jetfan.BlockingHandler.process,
                   jetfan.Message.publish, jetfan.Handler.publish, jetfan.BlockingHandler.publish):
            self.assertIn("return", fn.__annotations__, fn.__qualname__)


class Logging(unittest.TestCase):
    def test_the_library_never_prints(self) -> None:
        for path in sorted(PACKAGE.glob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            calls = [n.lineno for n in ast.walk(tree)
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"]
            self.assertEqual(calls, [], path.name)
            self.assertNotIn("sys.stderr", path.read_text(encoding="utf-8"), path.name)

    def test_each_api_logs_to_a_child_of_the_jetfan_logger(self) -> None:
        package = logging.getLogger("jetfan")  # configuring this one configures both
        self.assertEqual(jetfan.aio.log.name, "jetfan.aio")
        self.assertEqual(jetfan.blocking.log.name, "jetfan.blocking")
        self.assertIs(jetfan.aio.log.parent, package)
        self.assertIs(jetfan.blocking.log.parent, package)


if __name__ == "__main__":
    unittest.main()
