// Small RAII layer over the SQLite C API (sqlite3.h): a connection, a prepared statement and a
// transaction guard that rolls back unless committed. Every failure throws attn::sqlite::Error with
// the database file, what was being done and SQLite's own message.
#pragma once
#include <concepts>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

struct sqlite3;
struct sqlite3_stmt;

namespace attn::sqlite {

/// An SQLite failure. what() = "<file>: <context>: <sqlite message>"; code() is the primary result
/// code (SQLITE_BUSY, SQLITE_NOTADB, ...), extended_code() the extended one.
class Error : public std::runtime_error {
 public:
  Error(int extended_code, const std::string& message);
  int code() const { return extended_code_ & 0xff; }
  int extended_code() const { return extended_code_; }

 private:
  int extended_code_;
};

/// How to open a file. read_only uses SQLITE_OPEN_READONLY: every write fails inside SQLite itself.
/// read_only_immutable also tells SQLite that nothing can change the file (URI parameter immutable=1):
/// no locks, no -wal/-shm, so it reads a DB on read-only storage; only correct when nothing can write it.
/// The read modes refuse a missing file (Error with SQLITE_CANTOPEN naming it).
enum class OpenMode { read_write_create, read_write, read_only, read_only_immutable };

class Statement;

/// One database connection (sqlite3*). Non-copyable, movable. Not for concurrent use from several
/// threads; open one connection per thread or process (WAL lets them run side by side).
class Connection {
 public:
  /// Opens `path` with extended result codes and `busy_timeout_ms` (how long a statement waits for a
  /// lock held by another connection before failing with SQLITE_BUSY). Sets no pragmas beyond that.
  static Connection open(const std::string& path, OpenMode mode, int busy_timeout_ms = 5000);

  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  /// Runs one or more statements that return no rows of interest (DDL, pragmas).
  void exec(const std::string& sql);
  /// Prepares exactly one statement; trailing text other than whitespace/';' is an error (so that a
  /// second statement is never silently ignored). The Statement must not outlive this connection.
  Statement prepare(std::string_view sql);

  std::int64_t last_insert_rowid() const;
  /// Rows changed by the most recent INSERT/UPDATE/DELETE.
  int changes() const;
  /// False while a transaction is open (sqlite3_get_autocommit() == 0).
  bool autocommit() const;
  const std::string& path() const { return path_; }
  bool read_only() const { return mode_ == OpenMode::read_only || mode_ == OpenMode::read_only_immutable; }
  /// How it was opened: a second connection to the same file opens it the same way (a DB on read-only storage
  /// is read immutable, ExperimentDb::open).
  OpenMode mode() const { return mode_; }
  sqlite3* handle() const { return db_; }

  /// "<path>: <context>: <sqlite3_errmsg>" for the connection's last error, as an Error.
  [[noreturn]] void fail(int rc, std::string_view context) const;

 private:
  Connection(sqlite3* db, std::string path, OpenMode mode);
  sqlite3* db_ = nullptr;
  std::string path_;
  OpenMode mode_ = OpenMode::read_write;
};

/// A prepared statement (sqlite3_stmt*). Parameters are 1-based, as in SQLite.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  template <std::integral T>
  Statement& bind(int index, T value) {
    return bind_int64(index, static_cast<std::int64_t>(value));
  }
  /// A non-finite value is refused (SQLite would store NaN as NULL): std::invalid_argument.
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
  Statement& bind(int index, std::nullopt_t);
  template <class T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind(index, std::nullopt);
  }
  Statement& bind_int64(int index, std::int64_t value);

  /// Steps once: true when a row is available, false when done. Throws Error on failure.
  bool step();
  /// Steps to completion, for statements that return no rows.
  void run();
  /// Resets for another execution and clears the bindings.
  void reset();

  int column_count() const;
  std::string column_name(int col) const;
  bool is_null(int col) const;
  std::int64_t column_int64(int col) const;
  double column_double(int col) const;
  /// Text of the column (a number is rendered by SQLite); "" for NULL.
  std::string column_text(int col) const;
  std::optional<std::int64_t> column_opt_int64(int col) const;
  std::optional<double> column_opt_double(int col) const;
  std::optional<std::string> column_opt_text(int col) const;

  /// sqlite3_stmt_readonly: true when the statement makes no direct change to the database file.
  bool readonly() const;
  std::string sql() const;

 private:
  friend class Connection;
  Statement(sqlite3_stmt* stmt, sqlite3* db, std::string path)
      : stmt_(stmt), db_(db), path_(std::move(path)) {}
  [[noreturn]] void fail(int rc, int index) const;
  sqlite3_stmt* stmt_ = nullptr;
  sqlite3* db_ = nullptr;
  std::string path_;  ///< for messages
};

/// Transaction guard: BEGIN on construction, COMMIT on commit(), ROLLBACK in the destructor when
/// commit() was not reached (an exception on the way leaves nothing written). Not nestable.
class Transaction {
 public:
  /// immediate takes the write lock at BEGIN (no lock upgrade failing half-way); deferred suits reads.
  enum class Kind { deferred, immediate };
  explicit Transaction(Connection& conn, Kind kind = Kind::immediate);
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  ~Transaction();
  void commit();

 private:
  Connection& conn_;
  bool done_ = false;
};

/// SQLite's current UTC time as stored in every *_at column: "2026-11-05T12:34:56.789Z".
inline constexpr const char* kNowSql = "strftime('%Y-%m-%dT%H:%M:%fZ','now')";

}  // namespace attn::sqlite
