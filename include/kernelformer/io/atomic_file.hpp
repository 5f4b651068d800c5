// kernelformer/io/atomic_file.hpp — outputs appear whole or not at all.
//
// atomic_writer stages each file as a temporary beside its destination; commit() renames them
// all into place. If anything fails before commit(), the destructor removes the temporaries (and
// the folders it made), so a failed command never leaves a partial or corrupted output behind.
// With staging{.in_memory = true} nothing touches the disk before commit(): a process killed
// while it computes (kill -9, a power cut) leaves neither a temporary nor a folder.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kf::io {

// How an atomic_writer stages its files.
struct staging {
  // Keep every staged file's bytes in memory until commit() writes and renames them: for outputs
  // made over a long computation (a report, an experiment's figures), small enough to hold.
  bool in_memory = false;
  // Create a destination's missing parent folders (when the temporary is made); they are removed
  // again if the writer is destroyed without a commit() (and they are still empty).
  bool make_folders = false;
};

class atomic_writer {
 public:
  atomic_writer() = default;
  explicit atomic_writer(staging how) : how_(how) {}
  atomic_writer(const atomic_writer&) = delete;
  atomic_writer& operator=(const atomic_writer&) = delete;
  ~atomic_writer();

  // Writes bytes to a temporary next to `path`; throws std::runtime_error naming the path.
  void stage(const std::string& path, std::string_view bytes);
  // The same, with the bytes written by WRITE straight into the temporary (no copy of a large
  // output in memory); WRITE returns false when a write failed.
  void stage_stream(const std::string& path, const std::function<bool(std::FILE*)>& write);
  // Renames every staged temporary onto its destination (in memory: writes them first).
  void commit();

 private:
  void make_temporary(const std::string& path, const std::function<bool(std::FILE*)>& write);

  staging how_;
  std::vector<std::pair<std::string, std::string>> staged_;   // (temporary, destination)
  std::vector<std::pair<std::string, std::string>> pending_;  // in memory: (destination, bytes)
  std::vector<std::string> made_folders_;                     // in the order they were made
};

// A check run on every destination before its temporary is made (stage, stage_stream): it
// throws to refuse the path. The kf command line installs one that refuses a file the command
// also reads (an output folder's file that is an input); none by default.
using output_guard = void (*)(const std::string& path);
void set_output_guard(output_guard guard);

// Called with each destination once commit() has moved it into place (from the committing
// thread). The kf command line installs one that lists, at the end of a command, every file the
// command wrote; none by default.
using commit_observer = void (*)(const std::string& path);
void set_commit_observer(commit_observer observer);

// One file, written atomically.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Whole file as bytes; throws std::runtime_error naming the path on failure.
std::string read_file(const std::string& path);

}  // namespace kf::io
