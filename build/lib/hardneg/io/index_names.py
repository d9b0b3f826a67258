"""File names of indexes: kept free of Faiss so that building the workflow DAG stays fast."""


def slug(factory: str) -> str:
    """A filesystem-safe name for a factory string: "OPQ8,PQ8" -> "OPQ8_PQ8", "Flat" -> "Flat".

    Commas become "_" (faiss's own separators never make this ambiguous); any character other than letters, digits,
    "_" and "." becomes "-" and its hex code, e.g. "IVF100(PQ4),Flat" -> "IVF100-28PQ4-29_Flat".
    """
    if not isinstance(factory, str) or not factory.strip():
        raise ValueError(f"factory must be a non-empty string, got {factory!r}")
    out = []
    for char in factory.strip():
        if char == ",":
            out.append("_")
        elif char.isascii() and (char.isalnum() or char in "_."):
            out.append(char)
        else:
            out.append(f"-{ord(char):02x}")
    return "".join(out)
