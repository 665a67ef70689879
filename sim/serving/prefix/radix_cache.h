// @brief The prefix cache as SGLang's RadixCache keeps it (python/sglang/srt/mem_cache/radix_cache.py at
// sgl-project/sglang 006b0e3d): a radix tree of page-granular keys, the longest cached prefix found by walking it
// (a node split where a match ends inside it), lock counts on the path of every running request, and eviction of
// unlocked leaves least recently used first, a parent becoming a leaf joining the candidates. Keys are pages, not
// tokens: one key names `page_tokens` tokens (SGLang aligns every key down to the page size, `page_align_keys`).
// Time is the simulator's clock, and ties in last access go to the older node, so a run is deterministic.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/engine/sim_time.h"

namespace hisparse::sim {

class RadixCache {
 public:
  /// A node of the tree; its handle is what a request locks while it runs.
  struct Node;
  using Key = uint64_t;  // one page of tokens

  struct Match {
    int64_t pages = 0;       // the longest cached prefix, in pages
    Node* last = nullptr;    // the node it ends at (the root when nothing matched)
  };

  explicit RadixCache(int64_t page_tokens);
  ~RadixCache();
  RadixCache(const RadixCache&) = delete;
  RadixCache& operator=(const RadixCache&) = delete;

  /// The longest cached prefix of `pages`; refreshes the access time of every node on it (radix_cache.py
  /// `_match_prefix_helper`), splitting the node the match ends inside.
  Match match(const std::vector<Key>& pages, SimTime now);
  /// What match() would find, without touching or splitting anything: the matched pages and, of them, those no
  /// running request holds yet (locking the match takes them out of the evictable pages).
  struct Peek {
    int64_t pages = 0, unlocked = 0;
  };
  Peek peek(const std::vector<Key>& pages) const;
  /// Inserts `pages` (a finished or chunked request's KV); returns how many of them were cached already (SGLang frees
  /// the request's duplicate copies of those). New pages are evictable until locked.
  int64_t insert(const std::vector<Key>& pages, SimTime now);
  /// A running request holds its prefix: every node from `node` to the root is locked (inc_lock_ref / dec_lock_ref).
  void lock(Node* node);
  void unlock(Node* node);
  /// Frees at least `pages` pages of unlocked leaves, least recently used first (older node on a tie), or all there
  /// are; returns the pages freed.
  int64_t evict(int64_t pages);

  int64_t page_tokens() const { return page_tokens_; }
  int64_t total_pages() const { return evictable_pages_ + protected_pages_; }
  int64_t evictable_pages() const { return evictable_pages_; }  // cached and not held by a running request
  int64_t protected_pages() const { return protected_pages_; }  // held by running requests
  Node* root() const { return root_.get(); }

 private:
  Node* split(Node* child, size_t at);
  void drop_leaf(Node* leaf);

  struct Leaves;  // the unlocked leaves, least recently used first (radix_cache.py's evictable_leaves)
  int64_t page_tokens_;
  std::unique_ptr<Node> root_;
  std::unique_ptr<Leaves> leaves_;
  int64_t evictable_pages_ = 0, protected_pages_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace hisparse::sim
