// kernelformer/io/mapped_file.hpp — a whole file mapped read-only, used in place.
//
// Large inputs (.npy arrays, CSV tables) are read through a private read-only map instead of
// being copied into a buffer: the pages come from the page cache as they are touched, and a
// .npy array in C order and the machine's byte order becomes a matrix view with no copy at all.
// The size is read once, when the file is opened, and every later check uses that size.
//
// A file that another process truncates while it is mapped makes the next touch of a vanished
// page raise SIGBUS. mapped_file_guard() installs (once per process) a handler that turns that
// into one line on stderr naming the file — "PATH: the file changed size while it was being
// read" — and exit status 1, instead of a crash. Outputs are staged only after every input has
// been read (io/atomic_file.hpp), so such an exit leaves nothing behind. The library never
// installs the handler by itself: a program (the kf CLI) opts in.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace kf::io {

class mapped_file {
 public:
  mapped_file() = default;
  // Maps PATH read-only; throws std::runtime_error naming the path (missing, a directory,
  // unreadable). A pipe, FIFO or /dev/stdin, which cannot be mapped, is read into memory
  // instead; an empty file gives an empty view.
  explicit mapped_file(const std::string& path);
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  mapped_file(mapped_file&& o) noexcept;
  mapped_file& operator=(mapped_file&& o) noexcept;
  ~mapped_file();

  std::string_view bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // Tells the kernel the pages before OFFSET will not be read again (a streaming parse calls
  // this as it goes, so a large file's pages do not pile up in the process's resident set).
  void release_before(std::size_t offset) const;

 private:
  void reset() noexcept;
  bool read_not_mapped() const { return data_ != nullptr && data_ == owned_.data(); }
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
  std::string owned_;  // the bytes of a pipe or FIFO, which cannot be mapped
  int slot_ = -1;      // the entry of the SIGBUS guard's table that names this map
};

// Installs the SIGBUS handler described above (idempotent, thread-safe).
void mapped_file_guard();

}  // namespace kf::io
