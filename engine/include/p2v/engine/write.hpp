#pragma once
// File output shared by every writer of p2v: a file is written whole or not at all.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace p2v::engine {

// Writes `content` to `path` atomically: a temporary file in the same directory, every write and
// the close checked, fsync, rename over `path`, fsync of the directory. On any failure the
// temporary is removed, `path` is left as it was, and p2v::Error "cannot write <what> '<path>':
// <reason>" is thrown. A `path` that exists and is not a regular file (a character device such as
// /dev/full or /dev/null, a FIFO) is written in place, with every write checked.
void write_file_atomic(const std::string& path, std::string_view content, const std::string& what = "file");

// Whether write_file_atomic(path, ..., what) could write `path` now, checked without touching it (for
// a command that would otherwise find out only after minutes of work): the same cases as the write,
// a standard stream or an existing non-regular file (a device, a FIFO) opened for writing and closed,
// otherwise an empty temporary created beside the target (a symbolic link's, as the write does) and
// removed. Throws the p2v::Error the write would: "cannot write <what> '<path>': <reason>".
void check_writable(const std::string& path, const std::string& what = "file");

// Writes several files (path, content), each as write_file_atomic does, with one flush to disk for
// all of them instead of one per file: every temporary is written and closed, then one syncfs(2) of
// each directory's file system, then the renames, then one fsync per directory. On a failure the
// temporaries not yet renamed are removed and Error names the file; the files renamed before it
// are whole (each file is whole or absent, never partly written). Paths that exist and are not
// regular files, or are symbolic links, go through write_file_atomic one by one.
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files,
                        const std::string& what = "file");

// Flushes stdout and reports whether every write to it succeeded (false: e.g. stdout is /dev/full
// or a closed pipe). The CLI calls it before exiting and turns false into an error with exit 2.
// `err`, when given, receives the errno of the failing flush (0 when the failure came from an
// earlier write whose errno is no longer known).
bool flush_stdout(int* err = nullptr);

}  // namespace p2v::engine
