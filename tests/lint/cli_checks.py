#!/usr/bin/env python3
"""Command-line behaviour of `lockstep lint`: exit codes, parse errors, files missing from
compile_commands.json, suppressions, output formats. Usage: cli_checks.py LOCKSTEP TESTS_LINT_DIR CHECK"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def expect(cond, what, proc=None):
    if not cond:
        if proc is not None:
            print("stdout:", proc.stdout, "\nstderr:", proc.stderr, sep="\n")
        sys.exit("FAILED: " + what)


def syntax_error(lockstep, here):
    src = os.path.join(here, "inputs", "syntax_error.cc")
    p = run([lockstep, "lint", src, "--", "-I" + os.path.join(here, "include")])
    expect(p.returncode == 2, f"exit code 2 on a syntax error, got {p.returncode}", p)
    expect("syntax_error.cc:5:" in p.stderr and "error:" in p.stderr, "the compiler's error names file and line", p)
    expect("could not be parsed" in p.stderr, "a one-line summary naming the file", p)


def missing_from_database(lockstep, here):
    with tempfile.TemporaryDirectory() as tmp:
        listed = os.path.join(tmp, "listed.cc")
        unlisted = os.path.join(tmp, "unlisted.cc")
        body = open(os.path.join(here, "corpus", "checkpoint_mpi.cc")).read()
        for path in (listed, unlisted):
            with open(path, "w") as f:
                f.write(body)
        inc = os.path.join(here, "include")
        with open(os.path.join(tmp, "compile_commands.json"), "w") as f:
            json.dump([{"directory": tmp, "file": listed,
                        "arguments": ["clang++", "-std=c++17", "-I" + inc, "-c", listed]}], f)
        p = run([lockstep, "lint", "-p", tmp, "--format", "json", listed])
        expect(p.returncode == 1 and "not in compile_commands.json" not in p.stderr,
               "a listed file is analyzed with its own flags and no note", p)
        # An unlisted file next to a listed one gets the flags inferred from it (as clangd does) ...
        p = run([lockstep, "lint", "-p", tmp, "--format", "json", unlisted])
        expect("unlisted.cc: note: not in compile_commands.json; analyzed with flags inferred from" in p.stderr
               and "listed.cc" in p.stderr, "a note names the unlisted file and where its flags come from", p)
        expect(p.returncode == 1, f"the unlisted file is analyzed (exit 1), got {p.returncode}", p)
        # ... and with an empty database, the defaults for its kind (CPATH brings the fake MPI header).
        empty = os.path.join(tmp, "empty")
        os.mkdir(empty)
        with open(os.path.join(empty, "compile_commands.json"), "w") as f:
            f.write("[]")
        env = dict(os.environ, CPATH=inc)
        p = run([lockstep, "lint", "-p", empty, "--format", "json", unlisted], env=env)
        expect("unlisted.cc: note: not in compile_commands.json; analyzed with default flags (-std=c++17)" in p.stderr,
               "a note names the unlisted file and the defaults", p)
        expect(p.returncode == 1, f"the unlisted file is still analyzed (exit 1), got {p.returncode}", p)
        report = json.loads(p.stdout)
        expect(any(f["rule"] == "conditional-collective" for f in report["findings"]), "its finding is reported", p)
        expect(any("not in compile_commands.json" in n["message"] for n in report["tool_notes"]),
               "the note is in the JSON report too", p)
        p = run([lockstep, "lint", "-p", os.path.join(tmp, "nowhere"), listed])
        expect(p.returncode == 2 and "compile_commands.json" in p.stderr, "a missing database is bad input", p)


def suppression(lockstep, here):
    src = os.path.join(here, "inputs", "suppressed.cc")
    p = run([lockstep, "lint", "--format", "json", src, "--", "-I" + os.path.join(here, "include")])
    expect(p.returncode == 1, "the unsuppressed finding remains", p)
    lines = sorted(f["location"]["line"] for f in json.loads(p.stdout)["findings"])
    expect(lines == [11], f"only line 11 is reported, got {lines}", p)


def formats_and_exit_codes(lockstep, here):
    clean = os.path.join(here, "corpus", "trip_count_nccl.cc")
    inc = "-I" + os.path.join(here, "include")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.txt")
        p = run([lockstep, "lint", "-o", out, clean, "--", inc])
        expect(p.returncode == 1 and p.stdout == "", "-o writes the report to the file", p)
        text = open(out).read()
        expect(": warning: " in text and "[conditional-collective]" in text and ": note: " in text,
               "clang-style text with rule id and notes", p)
    p = run([lockstep, "lint", "--format", "xml", clean])
    expect(p.returncode == 2, "an unknown format is a usage error", p)
    p = run([lockstep, "lint", os.path.join(here, "no-such-file.cc")])
    expect(p.returncode == 2 and "no-such-file.cc" in p.stderr, "a missing file is bad input naming it", p)
    with tempfile.TemporaryDirectory() as tmp:
        fortran = os.path.join(tmp, "solver.F90")
        with open(fortran, "w") as f:
            f.write("program solver\n  use mpi\nend program\n")
        p = run([lockstep, "lint", fortran])
        expect(p.returncode == 2 and "solver.F90: a Fortran source" in p.stderr and "C, C++ and CUDA" in p.stderr,
               "a Fortran file named on the command line is bad input that says why", p)
        # In a compilation database, Fortran sources are left out and the C beside them analyzed.
        with open(os.path.join(tmp, "compile_commands.json"), "w") as f:
            json.dump([{"directory": tmp, "file": fortran, "command": "gfortran -c " + fortran},
                       {"directory": tmp, "file": clean, "command": "c++ -c " + clean + " " + inc}], f)
        p = run([lockstep, "lint", "-p", tmp])
        expect(p.returncode == 1 and "solver.F90" not in p.stderr + p.stdout,
               "a database's Fortran source is skipped, its C++ linted", p)
    with tempfile.TemporaryDirectory() as tmp:
        ok = os.path.join(tmp, "ok.cc")
        with open(ok, "w") as f:
            f.write('#include <mpi.h>\nvoid f() { MPI_Barrier(MPI_COMM_WORLD); }\n')
        p = run([lockstep, "lint", ok, "--", inc])
        expect(p.returncode == 0 and p.stdout == "", "no findings: exit 0, no output", p)
        bad_rules = os.path.join(tmp, "bad.yaml")
        with open(bad_rules, "w") as f:
            f.write("collectives:\n  - {name: my_allreduce, args: [in, sideways]}\n")
        p = run([lockstep, "lint", "--rules", bad_rules, ok, "--", inc])
        expect(p.returncode == 2 and "bad.yaml:2" in p.stderr and "sideways" in p.stderr,
               "a bad rules file is reported with file, line and problem", p)


def user_wrappers(lockstep, here):
    inc = "-I" + os.path.join(here, "include")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "wrappers.cc")
        with open(src, "w") as f:
            f.write("#include <mpi.h>\n"
                    "void my_sync(int tag);\n"
                    "[[clang::annotate(\"lockstep::collective\")]] void team_barrier();\n"
                    "void step() {\n"
                    "  int rank = 0;\n"
                    "  MPI_Comm_rank(MPI_COMM_WORLD, &rank);\n"
                    "  if (rank) my_sync(1);\n"
                    "  if (rank) team_barrier();\n"
                    "}\n")
        rules = os.path.join(tmp, "mine.yaml")
        with open(rules, "w") as f:
            f.write("collectives:\n  - {name: my_sync, args: [other]}\n")
        p = run([lockstep, "lint", "--format", "json", src, "--", inc])
        lines = sorted(f["location"]["line"] for f in json.loads(p.stdout)["findings"])
        expect(lines == [8], f"the annotated wrapper is a collective, got lines {lines}", p)
        p = run([lockstep, "lint", "--format", "json", "--rules", rules, src, "--", inc])
        lines = sorted(f["location"]["line"] for f in json.loads(p.stdout)["findings"])
        expect(lines == [7, 8], f"--rules adds the wrapper, got lines {lines}", p)


def isolation(lockstep, here):
    """A file that crashes the analysis, throws, or does not parse loses only itself: every other file's
    findings are printed, then one line per failed file; exit 1 with findings, 2 only without."""
    inc = "-I" + os.path.join(here, "include")
    buggy = os.path.join(here, "corpus", "checkpoint_mpi.cc")
    clean = os.path.join(here, "corpus", "prototype_less_fixed.c")
    broken = os.path.join(here, "inputs", "syntax_error.cc")
    for kind, line in (("crash", "lockstep: internal error analyzing "),
                       ("throw", "lockstep: internal error analyzing ")):
        env = dict(os.environ, LOCKSTEP_LINT_FAULT=kind + ":prototype_less_fixed")
        p = run([lockstep, "lint", "-j", "2", "--format", "json", buggy, clean, "--", inc], env=env)
        expect(p.returncode == 1, f"{kind}: findings of the other file decide the exit code (1), got {p.returncode}", p)
        expect(line + clean in p.stderr, f"{kind}: a one-line internal error names the file", p)
        report = json.loads(p.stdout)
        expect(any(f["location"]["file"].endswith("checkpoint_mpi.cc") for f in report["findings"]),
               f"{kind}: the other file's findings are reported", p)
        expect(any("internal error" in n["message"] for n in report["tool_notes"]),
               f"{kind}: the failure is a tool note in JSON too", p)
        p = run([lockstep, "lint", clean, "--", inc], env=env)
        expect(p.returncode == 2 and line + clean in p.stderr, f"{kind}: alone, the failure is exit 2", p)
    # Findings and an unparseable file together: findings first (stdout), the failure last, exit 1.
    p = run([lockstep, "lint", buggy, broken, "--", inc])
    expect(p.returncode == 1, f"findings plus a parse failure exit 1, got {p.returncode}", p)
    expect("[conditional-collective]" in p.stdout, "the finding is printed", p)
    expect(p.stderr.rstrip().splitlines()[-1].endswith("syntax_error.cc: could not be parsed (errors above)"),
           "the per-file error comes last", p)
    # A missing header is named in a per-file note.
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "uses_omp.cc")
        with open(src, "w") as f:
            f.write("#include <mpi.h>\n#include <lockstep_absent_omp.h>\nvoid f() { MPI_Barrier(MPI_COMM_WORLD); }\n")
        p = run([lockstep, "lint", "--format", "json", src, "--", inc])
        expect(p.returncode == 2, f"an unanalyzable file alone exits 2, got {p.returncode}", p)
        expect(f"lockstep lint: {src}: header 'lockstep_absent_omp.h' not found" in p.stderr,
               "the note names the missing header", p)
        expect(any("lockstep_absent_omp.h" in n["message"] for n in json.loads(p.stdout)["tool_notes"]),
               "and is a JSON tool note", p)


def assume_local(lockstep, here):
    """argv and the environment are uniform by default; --assume-local argv,env makes them rank-local."""
    inc = "-I" + os.path.join(here, "include")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "inputs.cc")
        with open(src, "w") as f:
            f.write("#include <mpi.h>\n#include <stdlib.h>\n"
                    "int main(int argc, char** argv) {\n"
                    "  MPI_Init(&argc, &argv);\n"
                    "  if (argc > 1) MPI_Barrier(MPI_COMM_WORLD);\n"
                    "  if (getenv(\"TRAIN_DEBUG\")) MPI_Barrier(MPI_COMM_WORLD);\n"
                    "  return MPI_Finalize();\n"
                    "}\n")
        p = run([lockstep, "lint", "--format", "json", src, "--", inc])
        expect(p.returncode == 0, f"uniform by default: exit 0, got {p.returncode}", p)
        for flag, lines in (("argv", [5]), ("env", [6]), ("argv,env", [5, 6])):
            p = run([lockstep, "lint", "--format", "json", "--assume-local", flag, src, "--", inc])
            got = sorted(f["location"]["line"] for f in json.loads(p.stdout)["findings"])
            expect(p.returncode == 1 and got == lines, f"--assume-local {flag}: lines {lines}, got {got}", p)
        p = run([lockstep, "lint", "--assume-local", "stdin", src, "--", inc])
        expect(p.returncode == 2 and "stdin" in p.stderr, "an unknown --assume-local value is a usage error", p)


def _nvcc_finding(lockstep, build_dir, src, proc_what):
    p = run([lockstep, "lint", "-p", build_dir, "--format", "json", src])
    expect(p.returncode == 1, f"{proc_what}: the .cu file is analyzed (exit 1), got {p.returncode}", p)
    line = next(i + 1 for i, t in enumerate(open(src)) if "if (rank == 0) MPI_Allreduce" in t)
    got = [(f["location"]["line"], f["rule"]) for f in json.loads(p.stdout)["findings"]]
    expect(got == [(line, "conditional-collective")], f"{proc_what}: the rank-0-only allreduce, got {got}", p)


def nvcc_database(lockstep, here):
    """A compile_commands.json entry written for nvcc (checked in, paths filled in here)."""
    fixture = os.path.join(here, "inputs", "nvcc_db")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(fixture, tmp, dirs_exist_ok=True)
        for name in ("compile_commands.json", os.path.join("rsp", "includes_CUDA.rsp")):
            text = open(os.path.join(tmp, name + ".in")).read()
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text.replace("@DIR@", tmp).replace("@INC@", os.path.join(here, "include")))
        _nvcc_finding(lockstep, tmp, os.path.join(tmp, "reduce.cu"), "nvcc database")


def nvcc_cmake_project(lockstep, here):
    """A small CMake CUDA project configured with the toolkit here: its real compile_commands.json."""
    nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    if not os.path.exists(nvcc) or not shutil.which("cmake"):
        print(f"SKIP: no CUDA toolkit ({nvcc}) or no cmake")
        sys.exit(77)
    fixture = os.path.join(here, "inputs", "nvcc_db")
    with tempfile.TemporaryDirectory() as tmp:
        src, build = os.path.join(tmp, "src"), os.path.join(tmp, "build")
        os.makedirs(os.path.join(src, "inc"))
        shutil.copy(os.path.join(fixture, "reduce.cu"), src)
        shutil.copy(os.path.join(fixture, "inc", "stepper.h"), os.path.join(src, "inc"))
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.18)\n"
                    "project(nvcc_db LANGUAGES CXX CUDA)\n"
                    "set(CMAKE_CUDA_ARCHITECTURES 80)\n"
                    "set(CMAKE_CUDA_USE_RESPONSE_FILE_FOR_INCLUDES ON)\n"
                    "add_library(step STATIC reduce.cu)\n"
                    "target_include_directories(step PRIVATE inc)\n"
                    f"target_include_directories(step SYSTEM PRIVATE {os.path.join(here, 'include')})\n"
                    "target_compile_definitions(step PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:NDEBUG>)\n"
                    "target_compile_options(step PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-DFROM_XCOMPILER "
                    "--expt-relaxed-constexpr>)\n"
                    "set_target_properties(step PROPERTIES CUDA_SEPARABLE_COMPILATION ON CUDA_STANDARD 17)\n")
        p = run(["cmake", "-S", src, "-B", build, "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                 "-DCMAKE_CUDA_COMPILER=" + nvcc])
        if p.returncode != 0:
            print(p.stdout[-2000:], p.stderr[-2000:])
            print("SKIP: the CUDA toolkit here cannot configure a CMake CUDA project (see above)")
            sys.exit(77)
        db = json.load(open(os.path.join(build, "compile_commands.json")))
        expect(any("nvcc" in (e.get("command") or " ".join(e.get("arguments", []))) for e in db),
               "CMake wrote an nvcc entry", p)
        _nvcc_finding(lockstep, build, os.path.join(src, "reduce.cu"), "CMake CUDA project")


CHECKS = {f.__name__: f for f in (syntax_error, missing_from_database, suppression, formats_and_exit_codes,
                                  user_wrappers, isolation, assume_local, nvcc_database, nvcc_cmake_project)}

if __name__ == "__main__":
    lockstep, here, check = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    CHECKS[check](lockstep, here)
    print("ok", check)
