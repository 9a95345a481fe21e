"""Many processes on the embedded broker at once: 4 publishing, 3 consuming, 20,000
messages over 5 queues. Nothing is lost, duplicated or corrupted, and no consumer dies.

Messages run up to 64 KiB and some up to 4 MiB, so a write that a consumer could read
before it ended (as with kombu's filesystem transport) would show as a refused or
corrupted message, or a consumer that died.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.broker_stress import Transport, run_stress
from weftboard.env_settings import broker_config

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def embedded_transport(folder) -> Transport:
    """The embedded broker as the settings configure it, on this test's folder."""
    _, options = broker_config("spool://")
    return Transport("spool://", {**options, "spool_folder": str(folder)})


def stress_four_by_three(tmp_path, **load: Any) -> Any:
    """Four publisher and three consumer processes on the embedded broker, two minutes at most."""
    return run_stress(
        embedded_transport(tmp_path / "spool"),
        workdir=tmp_path,
        publishers=4,
        consumers=3,
        timeout_s=120,
        **load,
    )


def test_four_publishers_and_three_consumers_pass_20000_messages_exactly_once(tmp_path):
    result = stress_four_by_three(tmp_path, messages=20_000, queues=5)

    assert result.publisher_exits == [0, 0, 0, 0], result.describe()
    assert result.consumer_exits == [0, 0, 0], result.describe()
    assert result.unique == 20_000, result.describe()
    assert (result.lost, result.duplicates, result.corrupted, result.rejected) == (0, 0, 0, 0)


def test_large_messages_are_never_read_half_written(tmp_path):
    result = stress_four_by_three(tmp_path, messages=1_000, queues=3, max_pad=4 << 20)

    assert result.ok, result.describe()
    assert (result.unique, result.duplicates) == (1_000, 0), result.describe()
