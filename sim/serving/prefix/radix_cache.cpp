// @brief The radix prefix cache (radix_cache.h): match, insert, lock and LRU leaf eviction, with the set of evictable
// leaves kept ordered by (last access, node id) so an eviction does not walk the tree.
#include "sim/serving/prefix/radix_cache.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.h"

namespace hisparse::sim {

struct RadixCache::Node {
  std::vector<Key> key;                              // the pages this node adds to its parent's prefix
  Node* parent = nullptr;
  std::map<Key, std::unique_ptr<Node>> children;     // by the child's first page
  int64_t lock = 0;                                  // running requests whose prefix passes through this node
  SimTime last_access = 0;
  uint64_t id = 0;                                   // creation order: the tie-break of eviction
};

namespace {

bool older_first(const RadixCache::Node* a, const RadixCache::Node* b);

size_t common_prefix(const std::vector<RadixCache::Key>& node_key, const std::vector<RadixCache::Key>& pages,
                     size_t from) {
  size_t i = 0;
  while (i < node_key.size() && from + i < pages.size() && node_key[i] == pages[from + i]) ++i;
  return i;
}

}  // namespace

struct RadixCache::Leaves {
  struct Order {
    bool operator()(const Node* a, const Node* b) const { return older_first(a, b); }
  };
  std::set<Node*, Order> set;
  /// A node's access time changes its place: taken out, stamped, put back (if it was there).
  void touch(Node* n, SimTime now) {
    const bool was = set.erase(n) > 0;
    n->last_access = now;
    if (was) set.insert(n);
  }
};

namespace {
bool older_first(const RadixCache::Node* a, const RadixCache::Node* b) {
  if (a->last_access != b->last_access) return a->last_access < b->last_access;
  return a->id < b->id;
}
}  // namespace

RadixCache::RadixCache(int64_t page_tokens)
    : page_tokens_(page_tokens), root_(std::make_unique<Node>()), leaves_(std::make_unique<Leaves>()) {
  if (page_tokens < 1) throw_error("prefix cache: page of {} tokens: expected >= 1", page_tokens);
  root_->lock = 1;  // the root is never evicted (radix_cache.py reset(): root lock_ref 1)
}

RadixCache::~RadixCache() = default;

RadixCache::Match RadixCache::match(const std::vector<Key>& pages, SimTime now) {
  auto touch = [&](Node* n) { leaves_->touch(n, now); };
  Node* node = root_.get();
  touch(node);
  size_t i = 0;
  Match m;
  while (i < pages.size()) {
    auto it = node->children.find(pages[i]);
    if (it == node->children.end()) break;
    Node* child = it->second.get();
    touch(child);
    const size_t l = common_prefix(child->key, pages, i);
    m.pages += static_cast<int64_t>(l);
    i += l;
    if (l < child->key.size()) {
      node = split(child, l);
      break;
    }
    node = child;
  }
  m.last = node;
  return m;
}

RadixCache::Peek RadixCache::peek(const std::vector<Key>& pages) const {
  const Node* node = root_.get();
  size_t i = 0;
  Peek p;
  while (i < pages.size()) {
    auto it = node->children.find(pages[i]);
    if (it == node->children.end()) break;
    const Node* child = it->second.get();
    const size_t l = common_prefix(child->key, pages, i);
    p.pages += static_cast<int64_t>(l);
    if (child->lock == 0) p.unlocked += static_cast<int64_t>(l);
    i += l;
    if (l < child->key.size()) break;
    node = child;
  }
  return p;
}

int64_t RadixCache::insert(const std::vector<Key>& pages, SimTime now) {
  auto touch = [&](Node* n) { leaves_->touch(n, now); };
  Node* node = root_.get();
  touch(node);
  size_t i = 0;
  while (i < pages.size()) {
    auto it = node->children.find(pages[i]);
    if (it == node->children.end()) break;
    node = it->second.get();
    touch(node);
    const size_t l = common_prefix(node->key, pages, i);
    i += l;
    if (l < node->key.size()) node = split(node, l);
  }
  const int64_t cached = static_cast<int64_t>(i);
  if (i < pages.size()) {
    auto leaf = std::make_unique<Node>();
    leaf->key.assign(pages.begin() + static_cast<std::ptrdiff_t>(i), pages.end());
    leaf->parent = node;
    leaf->last_access = now;
    leaf->id = next_id_++;
    evictable_pages_ += static_cast<int64_t>(leaf->key.size());
    Node* raw = leaf.get();
    const Key first = raw->key.front();
    node->children[first] = std::move(leaf);
    leaves_->set.erase(node);  // a parent is no leaf
    leaves_->set.insert(raw);
  }
  return cached;
}

RadixCache::Node* RadixCache::split(Node* child, size_t at) {
  auto& leaves = leaves_->set;
  Node* parent = child->parent;
  auto top = std::make_unique<Node>();
  top->key.assign(child->key.begin(), child->key.begin() + static_cast<std::ptrdiff_t>(at));
  top->parent = parent;
  top->lock = child->lock;
  top->last_access = child->last_access;
  top->id = next_id_++;
  std::unique_ptr<Node> owned = std::move(parent->children[child->key.front()]);
  const bool was_leaf = leaves.erase(child) > 0;  // its key changes below; its order does not
  child->key.erase(child->key.begin(), child->key.begin() + static_cast<std::ptrdiff_t>(at));
  child->parent = top.get();
  if (was_leaf) leaves.insert(child);
  Node* raw = top.get();
  const Key below = child->key.front(), above = raw->key.front();
  raw->children[below] = std::move(owned);
  parent->children[above] = std::move(top);
  return raw;
}

void RadixCache::lock(Node* node) {
  auto& leaves = leaves_->set;
  for (; node && node != root_.get(); node = node->parent) {
    if (node->lock == 0) {
      evictable_pages_ -= static_cast<int64_t>(node->key.size());
      protected_pages_ += static_cast<int64_t>(node->key.size());
      leaves.erase(node);
    }
    ++node->lock;
  }
}

void RadixCache::unlock(Node* node) {
  auto& leaves = leaves_->set;
  for (; node && node != root_.get(); node = node->parent) {
    if (node->lock <= 0) throw_error("prefix cache: unlock of a node no request holds (lock {})", node->lock);
    if (--node->lock == 0) {
      evictable_pages_ += static_cast<int64_t>(node->key.size());
      protected_pages_ -= static_cast<int64_t>(node->key.size());
      if (node->children.empty()) leaves.insert(node);
    }
  }
}

void RadixCache::drop_leaf(Node* leaf) {
  auto& leaves = leaves_->set;
  leaves.erase(leaf);
  evictable_pages_ -= static_cast<int64_t>(leaf->key.size());
  Node* parent = leaf->parent;
  parent->children.erase(leaf->key.front());  // frees the leaf
  if (parent != root_.get() && parent->children.empty() && parent->lock == 0) leaves.insert(parent);
}

int64_t RadixCache::evict(int64_t pages) {
  auto& leaves = leaves_->set;
  int64_t freed = 0;
  while (freed < pages && !leaves.empty()) {
    Node* oldest = *leaves.begin();
    freed += static_cast<int64_t>(oldest->key.size());
    drop_leaf(oldest);
  }
  return freed;
}

}  // namespace hisparse::sim
