// @brief A read-only, seekable std::istream over bytes the caller keeps alive: the readers take it in place of a file
// (open_trace_memory; the fuzz targets read each input this way, with no scratch file per input).
#pragma once

#include <cstddef>
#include <istream>
#include <streambuf>

namespace hisparse::traces {

class MemoryInputStream : public std::istream {
 public:
  MemoryInputStream(const void* data, size_t size) : std::istream(nullptr), buf_(static_cast<const char*>(data), size) {
    rdbuf(&buf_);
  }

 private:
  class Buf : public std::streambuf {
   public:
    Buf(const char* data, size_t size) {
      char* b = const_cast<char*>(data);  // the get area is never written through
      setg(b, b, b + size);
    }

   protected:
    pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode which) override {
      if (!(which & std::ios_base::in)) return pos_type(off_type(-1));
      const off_type base = dir == std::ios_base::beg   ? 0
                            : dir == std::ios_base::cur ? gptr() - eback()
                                                        : egptr() - eback();
      const off_type to = base + off;
      if (to < 0 || to > egptr() - eback()) return pos_type(off_type(-1));
      setg(eback(), eback() + to, egptr());
      return pos_type(to);
    }
    pos_type seekpos(pos_type pos, std::ios_base::openmode which) override {
      return seekoff(off_type(pos), std::ios_base::beg, which);
    }
  };
  Buf buf_;
};

}  // namespace hisparse::traces
