#!/usr/bin/env python3
"""Checks the dependency rules of docs/architecture.md on the sources (CTest: layering).

- a module includes only the public headers (p2v/<module>/...) of the modules it may depend on;
- solver headers only in encodings/src/*_backend.cpp; MPI/CUDA/NCCL headers only in runtime/mpi;
- feature macros follow one convention: P2V_HAVE_<PART>.
Exits 1 listing every violation (file:line: what)."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# module directory -> (its include namespace, the namespaces it may include)
MODULES = {
    "engine": ("engine", {"engine"}),
    "sim": ("sim", {"sim", "engine"}),
    "reshard": ("reshard", {"reshard", "sim", "engine"}),
    "encodings": ("encodings", {"encodings", "reshard", "engine"}),
    "proofs/checker": ("checker", {"checker"}),
    "proofs": ("proofs", {"proofs", "encodings", "engine"}),
    "runtime/mpi": ("runtime", {"runtime", "reshard", "engine", "checker", "sim"}),
    "runtime": ("runtime", {"runtime", "reshard", "engine", "checker", "sim"}),
}
SOLVER = re.compile(r'#\s*include\s*[<"](z3\+\+\.h|z3\.h|cvc5/cvc5\.h)[>"]')
MPI = re.compile(r'#\s*include\s*[<"](mpi\.h|nccl\.h|cuda_runtime(_api)?\.h)[>"]')
P2V_INCLUDE = re.compile(r'#\s*include\s*"p2v/([a-z_]+)/')
SRC_INCLUDE = re.compile(r'#\s*include\s*"(\.\./|[a-z_]+/src/)')
OLD_MACRO = re.compile(r'\b(HAVE_P2V_[A-Z_]+|P2V_PROOFS_HAVE_[A-Z_]+)\b|__has_include\s*\(\s*"p2v/')


def module_of(rel: str):
    for m in sorted(MODULES, key=len, reverse=True):
        if rel.startswith(m + "/"):
            return m
    return None


def main() -> int:
    bad = []
    for path in sorted(ROOT.rglob("*")):
        if path.suffix not in {".cpp", ".hpp", ".h", ".cu"} or "build" in path.parts or ".git" in path.parts:
            continue
        rel = path.relative_to(ROOT).as_posix()
        mod = module_of(rel)
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            where = f"{rel}:{n}"
            if SOLVER.search(line) and not re.fullmatch(r"encodings/src/\w+_backend\.cpp", rel):
                bad.append(f"{where}: solver header outside encodings/src/*_backend.cpp")
            if MPI.search(line) and not rel.startswith("runtime/mpi/") and not rel.startswith("tests/") \
                    and not rel.startswith("bench/"):
                bad.append(f"{where}: MPI/CUDA/NCCL header outside runtime/mpi")
            if SRC_INCLUDE.search(line):
                bad.append(f"{where}: includes another directory's private sources")
            if OLD_MACRO.search(line):
                bad.append(f"{where}: feature macro not in the P2V_HAVE_<PART> convention")
            m = P2V_INCLUDE.search(line)
            if m and mod and m.group(1) not in MODULES[mod][1]:
                bad.append(f"{where}: {mod} may not include p2v/{m.group(1)}/ (allowed: "
                           f"{', '.join(sorted(MODULES[mod][1]))})")
    for b in bad:
        print(b)
    print(f"check-layering: {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
