"""libsentinel.so's C API (include/sentinel/sentinel.h) as the Python test workloads call it, through ctypes.

    import sentinel_ctypes
    mark = sentinel_ctypes.step_marker()       # sentinel_step, or None when the library is not loaded
    clock = sentinel_ctypes.allocation_clock()  # clock(): tracked allocations so far (0 without the library)

Both look the symbols up in the process itself (ctypes.CDLL(None)), so they find the library only where
it is preloaded; a workload run without it (the reference run of a bit-identity check) gets None or a
clock that stays at 0. Neither call allocates anything the runtime tracks.
"""

import ctypes


class Stats(ctypes.Structure):
    """struct sentinel_stats."""
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "tracked_allocations", "tracked_frees", "live_bytes", "peak_live_bytes", "overhead_bytes", "steps_marked")]


def step_marker():
    """Returns sentinel_step() when libsentinel.so is loaded in the process, else None."""
    try:
        fn = ctypes.CDLL(None).sentinel_step
    except AttributeError:
        return None
    fn.restype = None
    fn.argtypes = []
    return fn


def allocation_clock():
    """Returns now(): the runtime's count of tracked allocations so far, read with sentinel_get_stats()
    (which marks nothing); a now() that returns 0 when the library is not loaded."""
    try:
        fn = ctypes.CDLL(None).sentinel_get_stats
    except AttributeError:  # not preloaded: the reference run
        return lambda: 0
    fn.argtypes = [ctypes.POINTER(Stats)]
    s = Stats()  # one fixed struct, filled in place: reading the clock allocates nothing

    def now():
        fn(ctypes.byref(s))
        return s.tracked_allocations
    return now
