"""The documents that cross a package boundary or a file: frozen, versioned, one reader each.

Every document has a ``schema`` id (``specwise.<kind>/<version>``), a ``to_json`` that writes the JSON users see
and a ``from_json`` that reads it back -- refusing, in one line, a document of another kind or a newer version.

* :class:`~specwise.contracts.profile.ProfileDoc` -- ``specwise profile`` (offline acceptance on real weights)
* :class:`~specwise.contracts.bench.BenchDoc` -- ``specwise bench`` (a load test; measured acceptance per config)
* :class:`~specwise.contracts.sweep.SweepResult` -- ``specwise simulate`` (QPS x k sweep and its decisions)
* :class:`~specwise.contracts.advice.Advice` -- ``specwise advise`` (the recommendation)
* :class:`~specwise.contracts.calibration.CalibrationDoc` -- ``specwise bench --calibrate`` (a fitted step-time law)
"""
