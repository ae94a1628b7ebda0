#include "db/sqlite.hpp"

#include <mutex>
#include <set>

#include "db/sqlite_batch.hpp"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

namespace attn::sqlite {

Error::Error(int extended_code, const std::string& message)
    : std::runtime_error(message), extended_code_(extended_code) {}

// ---------------------------------------------------------------------------------------------------
// Connection

Connection::Connection(sqlite3* db, std::string path, OpenMode mode)
    : db_(db), path_(std::move(path)), mode_(mode) {}

Connection Connection::open(const std::string& path, OpenMode mode, int busy_timeout_ms) {
  if (mode != OpenMode::read_write_create && !std::filesystem::exists(path)) {
    throw Error(SQLITE_CANTOPEN, fmt::format("{}: no such database file", path));
  }
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (mode == OpenMode::read_write) flags = SQLITE_OPEN_READWRITE;
  if (mode == OpenMode::read_only) flags = SQLITE_OPEN_READONLY;
  std::string name = path;
  if (mode == OpenMode::read_only_immutable) {
    flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
    name = "file:";
    for (char ch : path) {  // a URI path: escape what would end or change it
      if (ch == '%') name += "%25";
      else if (ch == '?') name += "%3f";
      else if (ch == '#') name += "%23";
      else name += ch;
    }
    name += "?immutable=1";
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(name.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    int ext = db ? sqlite3_extended_errcode(db) : rc;
    sqlite3_close(db);
    throw Error(ext, fmt::format("{}: cannot open database: {}", path, msg));
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return Connection(db, path, mode);
}

Connection::Connection(Connection&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      mode_(other.mode_) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    mode_ = other.mode_;
  }
  return *this;
}

Connection::~Connection() {
  if (db_) sqlite3_close_v2(db_);
}

void Connection::fail(int rc, std::string_view context) const {
  int ext = db_ ? sqlite3_extended_errcode(db_) : rc;
  const char* msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  if (ext == SQLITE_OK) ext = rc;
  throw Error(ext, fmt::format("{}: {}: {}", path_, context, msg));
}

void Connection::exec(const std::string& sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    int ext = sqlite3_extended_errcode(db_);
    throw Error(ext == SQLITE_OK ? rc : ext, fmt::format("{}: {}: {}", path_, sql.substr(0, 60), msg));
  }
}

Statement Connection::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, &tail);
  if (rc != SQLITE_OK) fail(rc, fmt::format("cannot prepare \"{}\"", sql));
  if (!stmt) throw Error(SQLITE_MISUSE, fmt::format("{}: empty SQL statement", path_));
  Statement result(stmt, db_, path_);
  std::string_view rest(tail, static_cast<std::size_t>(sql.data() + sql.size() - tail));
  if (rest.find_first_not_of(" \t\r\n;") != std::string_view::npos) {
    throw Error(SQLITE_MISUSE,
                fmt::format("{}: only one SQL statement is allowed; found more after \"{}\"", path_,
                            sql.substr(0, sql.size() - rest.size())));
  }
  return result;
}

std::int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
int Connection::changes() const { return sqlite3_changes(db_); }
bool Connection::autocommit() const { return sqlite3_get_autocommit(db_) != 0; }

// ---------------------------------------------------------------------------------------------------
// Statement

Statement::Statement(Statement&& other) noexcept
    : stmt_(std::exchange(other.stmt_, nullptr)), db_(other.db_), path_(std::move(other.path_)) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    if (stmt_) sqlite3_finalize(stmt_);
    stmt_ = std::exchange(other.stmt_, nullptr);
    db_ = other.db_;
    path_ = std::move(other.path_);
  }
  return *this;
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

void Statement::fail(int rc, int index) const {
  int ext = sqlite3_extended_errcode(db_);
  throw Error(ext == SQLITE_OK ? rc : ext, fmt::format("{}: bind parameter {} of \"{}\": {}", path_, index,
                                                       sql(), sqlite3_errmsg(db_)));
}

Statement& Statement::bind_int64(int index, std::int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) fail(rc, index);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  if (!std::isfinite(value)) {
    throw std::invalid_argument(
        fmt::format("{}: refusing to store the non-finite value {} (parameter {} of \"{}\")",
                    path_, value, index, sql()));
  }
  int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) fail(rc, index);
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  int rc = sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(rc, index);
  return *this;
}

Statement& Statement::bind(int index, std::nullopt_t) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) fail(rc, index);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // Keep the message before reset() can replace it.
  int ext = sqlite3_extended_errcode(db_);
  std::string msg = fmt::format("{}: \"{}\": {}", path_, sql(), sqlite3_errmsg(db_));
  sqlite3_reset(stmt_);
  throw Error(ext == SQLITE_OK ? rc : ext, msg);
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int Statement::column_count() const { return sqlite3_column_count(stmt_); }
std::string Statement::column_name(int col) const {
  const char* name = sqlite3_column_name(stmt_, col);
  return name ? name : "";
}
bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
std::int64_t Statement::column_int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::column_double(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::column_text(int col) const {
  const unsigned char* text = sqlite3_column_text(stmt_, col);
  if (!text) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
}

std::optional<std::int64_t> Statement::column_opt_int64(int col) const {
  if (is_null(col)) return std::nullopt;
  return column_int64(col);
}
std::optional<double> Statement::column_opt_double(int col) const {
  if (is_null(col)) return std::nullopt;
  return column_double(col);
}
std::optional<std::string> Statement::column_opt_text(int col) const {
  if (is_null(col)) return std::nullopt;
  return column_text(col);
}

bool Statement::readonly() const { return sqlite3_stmt_readonly(stmt_) != 0; }
std::string Statement::sql() const {
  const char* s = sqlite3_sql(stmt_);
  return s ? s : "";
}

// ---------------------------------------------------------------------------------------------------
// Transaction

namespace {

// Connections with an open Batch (by handle): their Transactions are savepoints. Kept here, not in Connection, so
// that Connection's and Transaction's layout stay as every caller was compiled with.
std::mutex batch_mu;
std::set<sqlite3*> batch_handles;

bool in_batch(sqlite3* db) {
  std::lock_guard<std::mutex> lock(batch_mu);
  return batch_handles.count(db) > 0;
}

void set_batch(sqlite3* db, bool on) {
  std::lock_guard<std::mutex> lock(batch_mu);
  if (on)
    batch_handles.insert(db);
  else
    batch_handles.erase(db);
}

}  // namespace

Transaction::Transaction(Connection& conn, Kind kind) : conn_(conn) {
  if (in_batch(conn_.handle()) && !conn_.autocommit()) {
    conn_.exec("SAVEPOINT attn_tx");
    return;
  }
  if (!conn_.autocommit()) {
    throw std::logic_error(fmt::format("{}: a transaction is already open (Transaction does not nest)",
                                       conn_.path()));
  }
  conn_.exec(kind == Kind::immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
}

void Transaction::commit() {
  conn_.exec(in_batch(conn_.handle()) ? "RELEASE attn_tx" : "COMMIT");
  done_ = true;
}

Transaction::~Transaction() {
  // SQLite may already have rolled back on its own (e.g. SQLITE_FULL); only roll back what is open.
  if (done_ || conn_.autocommit()) return;
  if (in_batch(conn_.handle()))
    sqlite3_exec(conn_.handle(), "ROLLBACK TO attn_tx; RELEASE attn_tx", nullptr, nullptr, nullptr);
  else
    sqlite3_exec(conn_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

Batch::Batch(Connection& conn) : conn_(conn) {
  if (!conn_.autocommit())
    throw std::logic_error(fmt::format("{}: a transaction is already open (a Batch starts one)", conn_.path()));
  conn_.exec("BEGIN IMMEDIATE");
  set_batch(conn_.handle(), true);
}

void Batch::commit() {
  set_batch(conn_.handle(), false);
  conn_.exec("COMMIT");
  done_ = true;
}

Batch::~Batch() {
  set_batch(conn_.handle(), false);
  if (!done_ && !conn_.autocommit()) sqlite3_exec(conn_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

}  // namespace attn::sqlite
