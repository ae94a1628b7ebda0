// Many ExperimentDb writes in one SQLite transaction, for bulk writers (lab/scripts/nightdb_gen.cpp).
#pragma once
#include "db/sqlite.hpp"

namespace attn::sqlite {

/// BEGIN IMMEDIATE on construction, COMMIT on commit(), ROLLBACK in the destructor otherwise; meanwhile every
/// Transaction on the connection is a SAVEPOINT inside it (released on its commit(), rolled back to otherwise).
/// Throws std::logic_error when a transaction is open already.
class Batch {
 public:
  explicit Batch(Connection& conn);
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  ~Batch();
  void commit();

 private:
  Connection& conn_;
  bool done_ = false;
};

}  // namespace attn::sqlite
