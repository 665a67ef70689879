// @brief The sweep journal (sim/sweep/sweep_journal.h): records survive their text form exactly (newlines and
// backslashes included), a line cut short by a kill or damaged ends the valid prefix, --resume reads back what an
// earlier run appended and refuses a journal of another spec, and a fresh run refuses to overwrite one.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.h"
#include "sim/sweep/sweep_journal.h"

using namespace hisparse;
using namespace hisparse::sim::sweep;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  const auto dir = fs::path(HISPARSE_BINARY_DIR) / "test_scratch" / (name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

const std::string kHeader = "hisparse-sweep-journal 1 spec 00000000000000ab items 3\n";

}  // namespace

TEST_CASE("sweep journal: records round-trip; a torn or damaged line ends the valid prefix") {
  const std::string awkward = "line one\\n stays\nline two \\\\ \n";
  const std::string j = kHeader + journal_record(2, awkward) + journal_record(0, "");
  const JournalContents c = parse_journal(j, "j");
  CHECK(c.spec == "00000000000000ab");
  CHECK(c.items == 3);
  CHECK(c.records == 2);
  CHECK(c.valid_bytes == j.size());
  REQUIRE(c.finished[2]);
  CHECK(*c.finished[2] == awkward);
  REQUIRE(c.finished[0]);
  CHECK(c.finished[0]->empty());
  CHECK(!c.finished[1]);

  // A kill in the middle of an append: the line has no newline; it is dropped, the earlier ones kept.
  const std::string rec1 = journal_record(1, "result of item 1");
  const JournalContents torn = parse_journal(j + rec1.substr(0, rec1.size() - 5), "j");
  CHECK(torn.records == 2);
  CHECK(torn.valid_bytes == j.size());
  CHECK(!torn.finished[1]);
  // A changed byte fails the checksum; an item beyond the work list is not a record of this sweep.
  std::string damaged = rec1;
  damaged[damaged.size() - 3] ^= 1;
  CHECK(parse_journal(kHeader + damaged, "j").records == 0);
  CHECK(parse_journal(kHeader + journal_record(3, "x"), "j").records == 0);
  // No complete header: nothing was journaled. Another file's first line: an error naming it.
  CHECK(parse_journal("hisparse-sweep-jour", "j").spec.empty());
  CHECK_THROWS_WITH_AS(parse_journal("point,job\n", "d/sweep.journal"), doctest::Contains("d/sweep.journal: not a sweep journal"),
                       Error);
}

TEST_CASE("sweep journal: --resume reads back an earlier run; a fresh run and another spec are refused") {
  const fs::path dir = scratch("sweep_journal");
  {
    SweepJournal j(dir.string(), "00000000000000ab", 3, false);
    CHECK(j.resumed_count() == 0);
    j.append(1, "one");
  }
  // The journal of a run that was killed: a fresh run must not overwrite it.
  CHECK_THROWS_WITH_AS(SweepJournal(dir.string(), "00000000000000ab", 3, false), doctest::Contains("pass --resume"),
                       Error);
  CHECK_THROWS_WITH_AS(SweepJournal(dir.string(), "00000000000000cd", 3, true),
                       doctest::Contains("belongs to another sweep"), Error);
  {
    // A torn tail from the kill is cut before appending, so the new record is on a line of its own.
    std::ofstream(dir / kJournalName, std::ios::app) << "item 2 5 ";
    SweepJournal j(dir.string(), "00000000000000ab", 3, true);
    CHECK(j.resumed_count() == 1);
    REQUIRE(j.finished()[1]);
    CHECK(*j.finished()[1] == "one");
    j.append(0, "zero");
  }
  std::ifstream in(dir / kJournalName, std::ios::binary);
  const JournalContents c = parse_journal(std::string(std::istreambuf_iterator<char>(in), {}), "j");
  CHECK(c.records == 2);
  CHECK(*c.finished[0] == "zero");
  SweepJournal done(dir.string(), "00000000000000ab", 3, true);
  done.remove();
  CHECK(!fs::exists(dir / kJournalName));
}

TEST_CASE("sweep journal: an output path that is a file fails before any work") {
  const fs::path dir = scratch("sweep_journal_file");
  fs::create_directories(dir);
  std::ofstream(dir / "a_file") << "x";
  CHECK_THROWS_WITH_AS(SweepJournal((dir / "a_file").string(), "00000000000000ab", 1, false),
                       doctest::Contains("a_file (--out): exists and is not a directory"), Error);
}
