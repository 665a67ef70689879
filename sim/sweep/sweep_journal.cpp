// @brief The sweep journal (see sweep_journal.h).
#include "sim/sweep/sweep_journal.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "core/io/output_file.h"
#include "core/io/read_file.h"

namespace hisparse::sim::sweep {

namespace {

namespace fs = std::filesystem;

constexpr const char* kMagic = "hisparse-sweep-journal 1";

// FNV-1a, 64 bits: a fixed, documented function (the hash must not change between builds or standard libraries, as
// std::hash may), to identify a spec and catch a damaged line; not a defence against anyone.
uint64_t fnv1a(const std::string& s, uint64_t h = 14695981039346656037ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex16(uint64_t v) { return fmt::format("{:016x}", v); }

std::string escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

bool unescape(const std::string& s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      *out += s[i];
      continue;
    }
    if (++i == s.size()) return false;
    if (s[i] == '\\') *out += '\\';
    else if (s[i] == 'n') *out += '\n';
    else return false;
  }
  return true;
}

/// Parses "item <i> <bytes> <hash> <text>" into `items`; false when the line is not intact.
bool parse_record(const std::string& line, size_t n_items, std::vector<std::optional<std::string>>& finished) {
  unsigned long long item = 0, bytes = 0;
  char hash[17] = {};
  int consumed = 0;
  if (std::sscanf(line.c_str(), "item %llu %llu %16[0-9a-f] %n", &item, &bytes, hash, &consumed) != 3 || consumed == 0)
    return false;
  if (item >= n_items) return false;
  std::string text;
  if (!unescape(line.substr(static_cast<size_t>(consumed)), &text)) return false;
  if (text.size() != bytes || hex16(fnv1a(text)) != hash) return false;
  finished[item] = std::move(text);
  return true;
}

}  // namespace

std::string sweep_spec_hash(const Grid& grid, const std::vector<WorkItem>& items) {
  uint64_t h = fnv1a(grid.text);
  for (const auto& w : items) {
    std::string d = fmt::format("|{} {} {} {} {}:", w.point, w.shard, w.shards, w.first_request, w.requests);
    for (int64_t p : w.points) d += fmt::format("{},", p);
    h = fnv1a(d, h);
  }
  return hex16(h);
}

std::string journal_record(size_t item, const std::string& text) {
  return fmt::format("item {} {} {} {}\n", item, text.size(), hex16(fnv1a(text)), escape(text));
}

JournalContents parse_journal(const std::string& bytes, const std::string& where) {
  JournalContents j;
  const size_t nl = bytes.find('\n');
  if (nl == std::string::npos) return j;  // not even its header made it to disk: an empty journal
  const std::string head = bytes.substr(0, nl);
  char spec[17] = {};
  unsigned long long n = 0;
  if (head.rfind(kMagic, 0) != 0 ||
      std::sscanf(head.c_str() + std::strlen(kMagic), " spec %16[0-9a-f] items %llu", spec, &n) != 2)
    throw_error("{}: not a sweep journal (its first line is '{}', expected '{} spec <hash> items <n>')", where,
                head.substr(0, 80), kMagic);
  j.spec = spec;
  j.items = static_cast<size_t>(n);
  j.finished.resize(j.items);
  j.valid_bytes = nl + 1;
  for (size_t pos = nl + 1; pos < bytes.size();) {
    const size_t end = bytes.find('\n', pos);
    if (end == std::string::npos) break;  // the last line was cut short
    if (!parse_record(bytes.substr(pos, end - pos), j.items, j.finished)) break;
    ++j.records;
    pos = end + 1;
    j.valid_bytes = pos;
  }
  return j;
}

SweepJournal::SweepJournal(const std::string& dir, const std::string& spec, size_t items, bool resume)
    : path_((fs::path(dir) / kJournalName).string()), finished_(items) {
  create_output_directory(dir);
  std::error_code ec;
  const bool exists = fs::exists(path_, ec);
  bool fresh = !exists;
  if (exists && !resume)
    throw_error("sweep: {} holds the finished work of an interrupted sweep: pass --resume to continue it, or remove "
                "the file to start over",
                path_);
  if (exists) {
    const JournalContents j = parse_journal(read_file(path_), path_);
    if (j.spec.empty()) {
      fresh = true;
    } else {
      if (j.spec != spec || j.items != items)
        throw_error("sweep: --resume: {} belongs to another sweep (spec {}, {} work items; this grid is spec {}, {} "
                    "items: the grid file or a trace's request count changed); remove it to start over",
                    path_, j.spec, j.items, spec, items);
      finished_ = j.finished;
      for (const auto& f : finished_) resumed_ += f.has_value();
      // Cut a torn last line so the next record starts on a line of its own.
      if (::truncate(path_.c_str(), static_cast<off_t>(j.valid_bytes)) != 0)
        throw_error("sweep: {}: cannot cut its torn last line: {}", path_, std::strerror(errno));
    }
  }
  if (fresh) {
    CheckedFile head(path_, CheckedFile::Mode::kCreate, "sweep journal");
    head.write(fmt::format("{} spec {} items {}\n", kMagic, spec, items));
    head.sync();
    head.close();
    sync_parent_directory(path_, "sweep journal");
  }
  file_ = std::make_unique<CheckedFile>(path_, CheckedFile::Mode::kAppend, "sweep journal");
}

void SweepJournal::append(size_t item, const std::string& text) {
  file_->write(journal_record(item, text));
  file_->sync();
}

void SweepJournal::remove() {
  file_->close();
  if (::unlink(path_.c_str()) != 0) throw_error("sweep: cannot remove {}: {}", path_, std::strerror(errno));
}

}  // namespace hisparse::sim::sweep
