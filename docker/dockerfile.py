"""A reader for the parts of docker/Dockerfile the checks need: its stages and, per stage, the
instructions, the packages `apt-get install` adds and the files COPY takes.

It understands what docker/Dockerfile uses (line continuations, comments, FROM ... AS name, RUN in
shell form) and raises ValueError, naming the line, on anything it cannot read, rather than guess.
"""

import re
import shlex
from dataclasses import dataclass, field


@dataclass
class Stage:
    name: str
    base: str
    line: int
    instructions: list = field(default_factory=list)  # (keyword, arguments, line)

    def all(self, keyword):
        return [(args, line) for kw, args, line in self.instructions if kw == keyword]

    def apt_packages(self):
        """Every package named by `apt-get install` in this stage's RUN instructions."""
        packages = []
        for args, line in self.all("RUN"):
            for command in re.split(r"&&|;|\|\|", args):
                words = shlex.split(command)
                if len(words) >= 2 and words[0] in ("apt-get", "apt") and "install" in words:
                    after = words[words.index("install") + 1:]
                    packages += [w for w in after if not w.startswith("-")]
        return packages

    def copies(self):
        """(from_stage or None, [sources], destination, line) for each COPY."""
        result = []
        for args, line in self.all("COPY"):
            words = shlex.split(args)
            source_stage = None
            while words and words[0].startswith("--"):
                option = words.pop(0)
                if option.startswith("--from="):
                    source_stage = option[len("--from="):]
            if len(words) < 2:
                raise ValueError(f"Dockerfile:{line}: COPY needs a source and a destination")
            result.append((source_stage, words[:-1], words[-1], line))
        return result


def read_stages(path):
    """The stages of the Dockerfile at path, in order."""
    logical = []  # (text, first line number)
    pending, start = "", None
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            text = raw.rstrip("\n")
            if not pending and (not text.strip() or text.lstrip().startswith("#")):
                continue
            if pending and text.lstrip().startswith("#"):
                continue  # a comment inside a continued instruction
            if start is None:
                start = number
            if text.endswith("\\"):
                pending += text[:-1] + " "
                continue
            logical.append((pending + text, start))
            pending, start = "", None
    if pending:
        raise ValueError(f"{path}:{start}: the file ends inside a continued line")

    stages = []
    for text, line in logical:
        keyword, _, args = text.strip().partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            match = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", args, re.IGNORECASE)
            if not match:
                raise ValueError(f"{path}:{line}: cannot read FROM {args}")
            stages.append(Stage(name=match.group(2) or str(len(stages)), base=match.group(1), line=line))
        elif keyword == "ARG" and not stages:
            continue  # an ARG before the first FROM
        elif not stages:
            raise ValueError(f"{path}:{line}: {keyword} before the first FROM")
        else:
            stages[-1].instructions.append((keyword, args, line))
    return stages


def stage(stages, name):
    for s in stages:
        if s.name == name:
            return s
    raise ValueError(f"the Dockerfile has no stage named {name!r} (it has {[s.name for s in stages]})")


def arg_default(stage_, name):
    """The default of `ARG name=value` in a stage, or None."""
    for args, _ in stage_.all("ARG"):
        key, _, value = args.partition("=")
        if key.strip() == name:
            return value.strip().strip('"') or None
    return None
