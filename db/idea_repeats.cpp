// Ideas judged again (db/idea_repeats.hpp).
#include "db/idea_repeats.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace attn {

void add_idea_repeat(ExperimentDb& db, std::int64_t idea_id, std::int64_t repeat_of) {
  if (idea_id == repeat_of || !db.idea(idea_id) || !db.idea(repeat_of))
    throw std::invalid_argument(fmt::format("add_idea_repeat: idea {} cannot repeat idea {} in {}", idea_id, repeat_of,
                                            db.path()));
  db.connection().prepare("INSERT INTO idea_repeats (idea_id, repeat_of) VALUES (?, ?)").bind(1, idea_id).bind(2, repeat_of).run();
}

std::map<std::int64_t, std::int64_t> idea_repeats(ExperimentDb& db) {
  std::map<std::int64_t, std::int64_t> out;
  auto tables = db.connection().prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'idea_repeats'");
  if (!tables.step()) return out;  // a version-11 file opened read-only (db/schema.hpp, readable_without)
  auto st = db.connection().prepare("SELECT idea_id, repeat_of FROM idea_repeats ORDER BY idea_id");
  while (st.step()) out.emplace(st.column_int64(0), st.column_int64(1));
  return out;
}

}  // namespace attn
