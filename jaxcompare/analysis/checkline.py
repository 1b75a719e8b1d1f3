"""One line of a checklist: what was checked, pass / warn / fail / n/a, why, and the pitfall that
explains it. checks.py judges each figure alone, consistency.py figures against each other; both
make these lines, and checks.checklist gathers them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

PASS, WARN, FAIL, NA = "pass", "warn", "fail", "n/a"


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    status: str
    reason: str
    pitfall: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
