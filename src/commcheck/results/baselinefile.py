"""The baseline file (``<references>/<system>.baseline.json``), written by ``commcheck
baseline`` (:mod:`commcheck.analysis.baseline` computes what it holds) and read by ``commcheck
compare`` and the report: per system, partition, environment, test and key variable, the
launches and their provenance, and the bound ReFrame's reference file got from them. Its reader
validates it (pydantic, no unknown field); files written before ``sessions`` and ``times`` were
recorded read with those empty.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from commcheck import experiments
from commcheck.errors import UserError
from commcheck.results import references
from commcheck.results.store import Sample, SampleKey, interned


class BaselineError(UserError):
    """Not enough to baseline on, or a baseline file that cannot be read."""


class Variable(BaseModel):
    model_config = ConfigDict(extra='forbid')
    system: str
    partition: str
    environ: str
    test: str
    variable: str
    unit: str
    direction: str
    median: float
    mad: float
    tolerance: float
    samples: list[float]
    provenance: list[dict[str, str]]
    #: Each launch's session and job completion time: the gate pairs a value with the floor
    #: of the same launch, and takes sessions as its unit (absent from older files).
    sessions: list[str] = []
    times: list[float] = []

    @model_validator(mode='after')
    def _unit_now(self):
        """A file written before the variable had a unit reads as having today's."""
        self.unit = experiments.unit_now(self.variable, self.unit)
        return self

    @property
    def key(self) -> SampleKey:
        return SampleKey(self.system, self.partition, self.environ, self.test, self.variable)


class BaselineFile(BaseModel):
    model_config = ConfigDict(extra='forbid')
    system: str
    created: str
    sessions: list[str]
    policy: dict
    variables: list[Variable]

    def samples(self) -> dict[tuple, list[Sample]]:
        """The baseline's launches as :class:`Sample` objects, keyed like history's."""
        out = {}
        for v in self.variables:
            sessions = v.sessions if len(v.sessions) == len(v.samples) else None
            times = v.times if len(v.times) == len(v.samples) else None
            out[v.key] = [Sample(session=sessions[i] if sessions else 'baseline',
                                 time=times[i] if times else 0.0, system=v.system,
                                 partition=v.partition, environ=v.environ, test=v.test,
                                 variable=v.variable, value=x, unit=v.unit, result='pass',
                                 provenance=interned(p))
                          for i, (x, p) in enumerate(zip(v.samples, v.provenance))]
        return out


def baseline_path(ref_dir: Path, system: str) -> Path:
    return ref_dir / f'{system}.baseline.json'


def load(path: Path) -> BaselineFile:
    try:
        return BaselineFile.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        raise BaselineError(f'{path}: no baseline (record one with `commcheck baseline`)') \
            from None
    except OSError as err:
        raise BaselineError(f'{path}: cannot read baseline ({err})') from None
    except ValidationError as err:
        first = err.errors()[0]
        where = '.'.join(str(p) for p in first['loc']) or '(top level)'
        raise BaselineError(f'{path}: not a commcheck baseline: {where}: {first["msg"]}') \
            from None


def save(path: Path, record: BaselineFile) -> Path | None:
    """Write ``record`` to ``path`` atomically, keeping the previous file as ``<name>.prev``."""
    return references.write_atomic(path, record.model_dump_json(indent=1) + '\n')
