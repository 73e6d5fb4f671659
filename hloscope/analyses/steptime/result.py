"""`StepTime`: one step's predicted time, its critical path, exposed links and top ops."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hloscope.analyses.steptime.schedule import OpRecord

TOP_OPS = 10


@dataclass(frozen=True)
class StepTime:
    """The per-op model's step on one device (see `hloscope.analyses.steptime`)."""

    device: str
    seconds: float
    compute_seconds: dict[str, float]  # busy compute-stream time by bound (matmul, memory, ...)
    phase_compute_seconds: dict[str, float]  # compute-stream time by phase
    exposed_seconds: dict[str, dict[str, float]]  # phase -> link -> seconds the stream waited
    link_busy_seconds: dict[str, float]  # link -> seconds it carried data (hidden + exposed)
    host_link_bytes_per_second: float
    host_link_source: str
    ops: tuple[OpRecord, ...] = field(repr=False, default=())
    missing: tuple[str, ...] = ()
    calibration: dict[str, Any] = field(default_factory=dict, repr=False)
    seconds_without_host: float | None = None  # the same step with a host link of no cost
    # (host link bytes/s, step seconds), ascending rates: the step of a program that moves data
    # to the host at other host links (the calibrated one among them)
    host_curve: tuple[tuple[float, float], ...] = ()

    @property
    def moves_host(self) -> bool:
        return bool(self.host_curve)

    @property
    def host_sensitive(self) -> bool:
        return self.seconds_without_host is not None and \
            self.seconds > self.seconds_without_host

    def host_link_needed(self, rival_seconds: float) -> float | None:
        """The host link (bytes/s per device each way) at which this step equals
        `rival_seconds`, from `host_curve`, each span of it taken as a + b / link (exact where
        the transfers are exposed whole); None when no link makes it as fast."""
        if not self.host_curve or self.seconds_without_host is None or \
                self.seconds_without_host >= rival_seconds:
            return None
        points = list(self.host_curve)
        if points[0][1] <= rival_seconds:
            return points[0][0]  # fast enough at the slowest link tried
        for (slow, slow_s), (fast, fast_s) in zip(points, points[1:], strict=False):
            if fast_s <= rival_seconds < slow_s:
                b = (slow_s - fast_s) / (1 / slow - 1 / fast)
                a = slow_s - b / slow
                return b / (rival_seconds - a) if rival_seconds > a else fast
        return None

    @property
    def exposed_by_link(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for links in self.exposed_seconds.values():
            for link, seconds in links.items():
                totals[link] = totals.get(link, 0.0) + seconds
        return totals

    @property
    def hidden_by_link(self) -> dict[str, float]:
        exposed = self.exposed_by_link
        return {link: max(0.0, busy - exposed.get(link, 0.0))
                for link, busy in self.link_busy_seconds.items()}

    @property
    def dominant(self) -> str:
        """The largest part of the step: a compute bound or a link's exposed time."""
        parts = {f"compute ({bound})": seconds for bound, seconds in self.compute_seconds.items()}
        parts.update({f"exposed {link}": s for link, s in self.exposed_by_link.items()})
        return max(parts, key=lambda key: parts[key]) if parts else "nothing"

    @property
    def is_lower_bound(self) -> bool:
        return bool(self.missing)

    def top_ops(self, count: int = TOP_OPS) -> list[OpRecord]:
        return sorted(self.ops, key=lambda op: op.total_seconds, reverse=True)[:count]

    def critical_path(self) -> list[dict[str, Any]]:
        """The compute stream phase by phase, with what it waited for on each link: the
        stream is the critical path of this model (a transfer ends it only by a wait)."""
        phases = set(self.phase_compute_seconds) | set(self.exposed_seconds)
        rows = [{"phase": phase, "compute_seconds": self.phase_compute_seconds.get(phase, 0.0),
                 "exposed_seconds": dict(self.exposed_seconds.get(phase, {}))}
                for phase in phases]
        return sorted(rows, key=lambda row: -(row["compute_seconds"]
                                              + sum(row["exposed_seconds"].values())))

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "seconds": self.seconds, "dominant": self.dominant,
                "compute_seconds": self.compute_seconds,
                "phase_compute_seconds": self.phase_compute_seconds,
                "exposed_seconds": self.exposed_seconds,
                "exposed_by_link": self.exposed_by_link, "hidden_by_link": self.hidden_by_link,
                "link_busy_seconds": self.link_busy_seconds,
                "critical_path": self.critical_path(),
                "host_link_bytes_per_second": self.host_link_bytes_per_second,
                "host_link_source": self.host_link_source,
                "top_ops": [_op_dict(op) for op in self.top_ops()],
                "seconds_without_host": self.seconds_without_host,
                "host_curve": [list(point) for point in self.host_curve],
                "ops_timed": len(self.ops), "missing": list(self.missing),
                "lower_bound": self.is_lower_bound, "calibration": self.calibration}


def _op_dict(op: OpRecord) -> dict[str, Any]:
    return {"computation": op.computation, "name": op.name, "opcode": op.opcode,
            "kind": op.kind, "phase": op.phase, "executions": op.executions,
            "seconds": op.seconds, "total_seconds": op.total_seconds, "bound": op.bound,
            "flops": op.flops, "bytes_accessed": op.bytes_accessed}
