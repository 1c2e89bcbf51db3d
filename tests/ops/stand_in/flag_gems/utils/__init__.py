from flag_gems.utils.libentry import libentry, libtuner

__all__ = ["libentry", "libtuner"]
