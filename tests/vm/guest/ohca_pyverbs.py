"""pyverbs across the rdma-core releases the guests run (44 in bookworm,
56 in trixie, 65 in sid), for the guest-side Python scripts; the harness
puts this file into every VM's share (/share/ohca_pyverbs.py).

    import sys; sys.path.insert(0, "/share")
    from ohca_pyverbs import verbs_enums
    e = verbs_enums()
"""


def verbs_enums():
    """pyverbs' IBV_* constants by name: module attributes of pyverbs.enums
    up to rdma-core 56; rdma-core 65 has only pyverbs.libibverbs_enums,
    where they are members of one enum class per C enum (int subclasses:
    they compare equal to, and combine with, plain ints)."""
    try:
        import pyverbs.enums as e
        return e
    except ImportError:
        import enum
        import types
        import pyverbs.libibverbs_enums as le
        ns = types.SimpleNamespace()
        for cls in vars(le).values():
            if isinstance(cls, type) and issubclass(cls, enum.Enum):
                # (__members__: a flag enum's iteration skips aliases)
                for name, member in cls.__members__.items():
                    setattr(ns, name, member)
        return ns
