"""RunOptions: what a client may ask of a pipeline run, validated at the boundary."""

from dataclasses import dataclass, field
from typing import Any, TypedDict

from explorer.protocol.errors import bad_request


class RunOptionsJSON(TypedDict):
    """RunOptions on the wire (`start_run`, `run_started`, RunSummary.options)."""

    opt_level: int
    disabled_pass: list[str]
    required_pass: list[str]
    passes: list[str] | None
    check_numerics: bool
    build: bool


OPTION_KEYS = frozenset(RunOptionsJSON.__annotations__)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What a client may ask of a pipeline run (validated at the boundary): by default the
    run is relay.build at opt_level 3; `build` false runs relay.optimize; `passes` runs
    that explicit list instead of the standard pipeline (and cannot be built)."""

    opt_level: int = 3
    disabled_pass: tuple[str, ...] = ()
    required_pass: tuple[str, ...] = ()
    passes: tuple[str, ...] | None = None
    check_numerics: bool = False
    build: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> RunOptionsJSON:
        return RunOptionsJSON(
            opt_level=self.opt_level,
            disabled_pass=list(self.disabled_pass),
            required_pass=list(self.required_pass),
            passes=None if self.passes is None else list(self.passes),
            check_numerics=self.check_numerics,
            build=self.build,
        )

    @staticmethod
    def from_json(raw: Any) -> "RunOptions":
        if raw is None:
            return RunOptions()
        if not isinstance(raw, dict):
            raise bad_request("bad_options", "run options must be an object")
        unknown = sorted(set(raw) - OPTION_KEYS)
        if unknown:
            raise bad_request("bad_options", f"unknown run options: {', '.join(unknown)}",
                              {"unknown": unknown})
        passes = raw.get("passes")
        build = _flag(raw.get("build", passes is None), "build")
        if build and passes is not None:
            raise bad_request("bad_options", "passes replaces relay.build's pipeline: an "
                              "explicit pass list runs with build false")
        return RunOptions(
            opt_level=_opt_level(raw.get("opt_level", 3)),
            disabled_pass=_names(raw.get("disabled_pass"), "disabled_pass"),
            required_pass=_names(raw.get("required_pass"), "required_pass"),
            passes=None if passes is None else _names(passes, "passes"),
            check_numerics=_flag(raw.get("check_numerics", False), "check_numerics"),
            build=build,
        )


def _opt_level(level: Any) -> int:
    if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 3:
        raise bad_request("bad_options", "opt_level must be an integer from 0 to 3")
    return level


def _names(value: Any, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise bad_request("bad_options", f"{key} must be a list of pass names")
    return tuple(value)


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise bad_request("bad_options", f"{key} must be true or false")
    return value
