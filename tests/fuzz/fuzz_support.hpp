#pragma once
// Shared by the fuzz targets (docs/FUZZING.md): the input as a file the
// readers can open by path, a reader of the input's leading bytes, a small
// TIFF writer that wraps arbitrary bytes as tiles, and the rule for what may
// escape a target (InputError only; anything else is a finding).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/error.hpp"

// C libraries may ask malloc for absurd sizes and cope with NULL: OpenSlide's
// vendor detection, which TiffSource calls, takes g_try_malloc(count x size)
// for a lying tag (2.85 GB, 256 TB seen) and touches none of it (13 MB
// resident in the release build). Under ASan even an untouched allocation
// costs resident shadow memory (2.5 GB for one 832-byte file), so malloc
// above 1 GB returns NULL here, as it would past the machine's memory. Our
// C++ `new` still reports an allocation it cannot make: nothing a target
// does legitimately needs 1 GB. (Each target is one translation unit, so this
// is defined once a program.)
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024";
}

namespace tw::fuzz {

// Inputs larger than this are skipped: the targets look for crashes, not
// for the time it takes to read a big file.
constexpr size_t kMaxInputBytes = size_t{1} << 20;

// A finding that is not a sanitizer report (a round trip that does not give
// back its input, two reads of the same pixels that differ): print why and
// stop the way libFuzzer recognises as a crash.
[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "tilewave fuzz finding: %s\n", what);
  __builtin_trap();
}

// TW_FUZZ_VERBOSE=1 prints the expected errors too (checking seeds).
inline void expected(const InputError& e) {
  static const bool verbose = std::getenv("TW_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "expected error: %s\n", e.what());
}

// The input as a file with a path: an anonymous memory file (memfd), opened
// again by the readers through /proc/self/fd/N. One per process, rewritten
// on every run.
class MemFile {
 public:
  MemFile() {
    fd_ = ::memfd_create("tw-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  const std::string& write(const uint8_t* data, size_t n) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    size_t done = 0;
    while (done < n) {
      const ssize_t w = ::pwrite(fd_, data + done, n - done, static_cast<off_t>(done));
      if (w <= 0) std::abort();
      done += static_cast<size_t>(w);
    }
    return path_;
  }
  const std::string& write(const std::vector<uint8_t>& b) { return write(b.data(), b.size()); }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Takes parameters from the front of the input, zeros once it runs out.
class Bytes {
 public:
  Bytes(const uint8_t* data, size_t n) : p_(data), n_(n) {}
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint32_t u32() { return static_cast<uint32_t>(u16()) | (static_cast<uint32_t>(u16()) << 16); }
  // One of the n choices.
  template <class T, size_t N>
  T pick(const T (&choices)[N]) {
    return choices[u8() % N];
  }
  bool flag() { return u8() & 1; }
  const uint8_t* data() const { return p_; }
  size_t size() const { return n_; }
  std::vector<uint8_t> rest() {
    std::vector<uint8_t> r(p_, p_ + n_);
    p_ += n_, n_ = 0;
    return r;
  }
  // Up to n of the remaining bytes.
  std::vector<uint8_t> take(size_t n) {
    n = n < n_ ? n : n_;
    std::vector<uint8_t> r(p_, p_ + n);
    p_ += n, n_ -= n;
    return r;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

// A classic little-endian TIFF of one image directory, written by hand so a
// target controls every tag and every stored byte (libtiff's writer would
// compress, or refuse, what a target wants stored as it is).
class TinyTiff {
 public:
  enum Type : uint16_t { kByte = 1, kAscii = 2, kShort = 3, kLong = 4, kUndefined = 7 };

  void tag_shorts(uint16_t tag, const std::vector<uint16_t>& v) {
    std::vector<uint8_t> b;
    for (uint16_t x : v) b.push_back(static_cast<uint8_t>(x)), b.push_back(static_cast<uint8_t>(x >> 8));
    add(tag, kShort, static_cast<uint32_t>(v.size()), b);
  }
  void tag_short(uint16_t tag, uint16_t v) { tag_shorts(tag, {v}); }
  void tag_longs(uint16_t tag, const std::vector<uint32_t>& v) {
    std::vector<uint8_t> b;
    for (uint32_t x : v)
      for (int k = 0; k < 4; ++k) b.push_back(static_cast<uint8_t>(x >> (8 * k)));
    add(tag, kLong, static_cast<uint32_t>(v.size()), b);
  }
  void tag_long(uint16_t tag, uint32_t v) { tag_longs(tag, {v}); }
  void tag_bytes(uint16_t tag, Type type, const std::vector<uint8_t>& b) {
    add(tag, type, static_cast<uint32_t>(b.size()), b);
  }

  // Tiles (or strips) in storage order; their offsets and byte counts go
  // into offsets_tag and counts_tag.
  void chunks(uint16_t offsets_tag, uint16_t counts_tag, std::vector<std::vector<uint8_t>> c) {
    offsets_tag_ = offsets_tag, counts_tag_ = counts_tag, chunks_ = std::move(c);
  }

  std::vector<uint8_t> bytes() const {
    // Header, chunk data, then the directory with its out-of-line values.
    std::vector<uint8_t> out = {'I', 'I', 42, 0, 0, 0, 0, 0};
    std::vector<uint32_t> offs, cnts;
    for (const auto& c : chunks_) {
      offs.push_back(static_cast<uint32_t>(out.size()));
      cnts.push_back(static_cast<uint32_t>(c.size()));
      out.insert(out.end(), c.begin(), c.end());
    }
    TinyTiff all = *this;
    if (!chunks_.empty()) {
      all.tag_longs(offsets_tag_, offs);
      all.tag_longs(counts_tag_, cnts);
    }
    std::vector<Entry> e = all.entries_;
    std::sort(e.begin(), e.end(), [](const Entry& a, const Entry& b) { return a.tag < b.tag; });
    if (out.size() % 2) out.push_back(0);
    const uint32_t ifd = static_cast<uint32_t>(out.size());
    put32(out, 4, ifd);
    uint32_t extra = ifd + 2 + 12 * static_cast<uint32_t>(e.size()) + 4;
    std::vector<uint8_t> dir, tail;
    push16(dir, static_cast<uint16_t>(e.size()));
    for (const Entry& x : e) {
      push16(dir, x.tag);
      push16(dir, x.type);
      push32(dir, x.count);
      if (x.value.size() <= 4) {
        std::vector<uint8_t> v = x.value;
        v.resize(4, 0);
        dir.insert(dir.end(), v.begin(), v.end());
      } else {
        push32(dir, extra + static_cast<uint32_t>(tail.size()));
        tail.insert(tail.end(), x.value.begin(), x.value.end());
        if (tail.size() % 2) tail.push_back(0);
      }
    }
    push32(dir, 0);  // no next directory
    out.insert(out.end(), dir.begin(), dir.end());
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  }

 private:
  struct Entry {
    uint16_t tag, type;
    uint32_t count;
    std::vector<uint8_t> value;
  };
  void add(uint16_t tag, uint16_t type, uint32_t count, const std::vector<uint8_t>& v) {
    for (auto& e : entries_)
      if (e.tag == tag) {
        e = {tag, type, count, v};
        return;
      }
    entries_.push_back({tag, type, count, v});
  }
  static void push16(std::vector<uint8_t>& o, uint16_t v) {
    o.push_back(static_cast<uint8_t>(v)), o.push_back(static_cast<uint8_t>(v >> 8));
  }
  static void push32(std::vector<uint8_t>& o, uint32_t v) {
    for (int k = 0; k < 4; ++k) o.push_back(static_cast<uint8_t>(v >> (8 * k)));
  }
  static void put32(std::vector<uint8_t>& o, size_t at, uint32_t v) {
    for (int k = 0; k < 4; ++k) o[at + k] = static_cast<uint8_t>(v >> (8 * k));
  }
  std::vector<Entry> entries_;
  uint16_t offsets_tag_ = 0, counts_tag_ = 0;
  std::vector<std::vector<uint8_t>> chunks_;
};

}  // namespace tw::fuzz
