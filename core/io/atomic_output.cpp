// @brief AtomicOutput (see atomic_output.h).
#include "core/io/atomic_output.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/error.h"

namespace hisparse {

AtomicOutput::AtomicOutput(std::string path, std::string what)
    : path_(std::move(path)),
      what_(std::move(what)),
      tmp_(path_ + ".tmp." + std::to_string(::getpid())),
      cleanup_(tmp_) {
  out_.open(tmp_, std::ios::binary | std::ios::trunc);
  if (!out_) fail("cannot write it (is the directory there and writable?)");
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  out_.close();
  std::remove(tmp_.c_str());  // an error before commit leaves no half file behind
}

void AtomicOutput::fail(const std::string& doing) const {
  if (what_.empty()) throw_error("{}: {}", tmp_, doing);
  throw_error("{} ({}): {}", tmp_, what_, doing);
}

void AtomicOutput::write(const char* data, size_t size) {
  out_.write(data, static_cast<std::streamsize>(size));
  if (!out_) fail("writing failed (disk full?)");
}

void AtomicOutput::commit() {
  if (committed_) return;
  out_.close();
  if (!out_) fail("writing failed (disk full?)");
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) fail("cannot rename it to " + path_ + ": " + ec.message());
  cleanup_.release();
  committed_ = true;
}

}  // namespace hisparse
