#include "exporters/http/web_config.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/config_file.h"
#include "exporters/http/bcrypt_hash.h"

namespace ncclscope {
namespace {

// The schema is three levels deep (root, tls_server_config, its keys); anything much deeper is not a web
// config, and a bound keeps both readers' recursion (and nlohmann's) off the stack of the job's thread.
constexpr int kMaxDepth = 8;
// Exporter-toolkit files are a few hundred bytes; 1 MiB still holds ~15,000 basic-auth users.
constexpr size_t kMaxWebConfigBytes = 1 << 20;

// One value of the document: a scalar or a mapping (keys in file order), with the line it starts on.
struct Node {
  int line = 0;
  bool is_map = false;
  bool is_null = false;  // `key:` with nothing after it and no nested block, `~` or `null`
  std::string scalar;
  std::vector<std::pair<std::string, Node>> map;
  std::vector<int> key_lines;  // the line of each key of `map`
  // Declared, defined below: clang 14 with libstdc++ 12 instantiates pair<string, Node> while Node is
  // still incomplete when the default constructor is implicit (the fuzz build is clang's).
  Node();
};

Node::Node() = default;

Status ErrorAt(const std::string& file, int line, const std::string& key, const std::string& what) {
  std::string m = file;
  if (line > 0) m += ":" + std::to_string(line);
  m += ": ";
  if (!key.empty()) m += Printable(key, 80) + ": ";
  return InvalidUsage(m + Printable(what, 240));
}

// ---- the YAML subset ----

struct Line {
  int no = 0;
  int indent = 0;
  std::string text;  // without indentation, comment and trailing blanks
};

class YamlReader {
 public:
  YamlReader(const std::string& text, const std::string& file) : file_(file) {
    std::istringstream in(text);
    std::string raw;
    int no = 0;
    while (std::getline(in, raw)) {
      ++no;
      if (!raw.empty() && raw.back() == '\r') raw.pop_back();
      raw_.push_back({no, raw});
    }
  }

  Result<Node> Read() {
    for (const auto& [no, raw] : raw_) {
      size_t indent = 0;
      while (indent < raw.size() && raw[indent] == ' ') ++indent;
      if (indent < raw.size() && raw[indent] == '\t') return ErrorAt(file_, no, "", "tab in indentation (use spaces)");
      std::string text = StripComment(raw.substr(indent));
      while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.pop_back();
      if (text.empty()) continue;
      if (indent == 0 && (text == "---" || text == "...")) continue;
      lines_.push_back({no, static_cast<int>(indent), text});
    }
    size_t i = 0;
    Node root;
    root.is_map = true;
    root.line = 1;
    if (lines_.empty()) return root;
    if (lines_.size() == 1 && lines_[0].text == "{}") return root;
    Status s = ReadBlock(&i, lines_[0].indent, "", 1, &root);
    if (!s.ok()) return s;
    if (i < lines_.size()) return ErrorAt(file_, lines_[i].no, "", "unexpected indentation");
    return root;
  }

 private:
  // Cuts a comment: '#' at the start or after a blank, outside quotes.
  static std::string StripComment(const std::string& s) {
    char quote = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (quote != 0) {
        if (c == '\\' && quote == '"')
          ++i;
        else if (c == quote)
          quote = 0;
      } else if (c == '\'' || c == '"') {
        // Quotes only open a quoted scalar at the start of a key or a value.
        if (i == 0 || s[i - 1] == ' ' || s[i - 1] == ':') quote = c;
      } else if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) {
        return s.substr(0, i);
      }
    }
    return s;
  }

  // Parses a quoted scalar starting at s[*pos] (the quote), leaving *pos past the closing quote.
  Status Quoted(const std::string& s, size_t* pos, int line, const std::string& key, std::string* out) {
    const char q = s[*pos];
    out->clear();
    for (size_t i = *pos + 1; i < s.size(); ++i) {
      const char c = s[i];
      if (q == '\'' && c == '\'') {
        if (i + 1 < s.size() && s[i + 1] == '\'') {
          out->push_back('\'');
          ++i;
          continue;
        }
        *pos = i + 1;
        return Status::Ok();
      }
      if (q == '"' && c == '"') {
        *pos = i + 1;
        return Status::Ok();
      }
      if (q == '"' && c == '\\') {
        if (++i == s.size()) break;
        switch (s[i]) {
          case 'n':
            out->push_back('\n');
            break;
          case 't':
            out->push_back('\t');
            break;
          case '\\':
            out->push_back('\\');
            break;
          case '"':
            out->push_back('"');
            break;
          case '/':
            out->push_back('/');
            break;
          default:
            return ErrorAt(file_, line, key, std::string("unsupported escape \\") + s[i] + " in a quoted string");
        }
        continue;
      }
      out->push_back(c);
    }
    return ErrorAt(file_, line, key, "unterminated quoted string (a quoted value must end on its line)");
  }

  Status Scalar(const std::string& text, int line, const std::string& key, Node* out) {
    out->line = line;
    if (text[0] == '\'' || text[0] == '"') {
      size_t pos = 0;
      NCCLSCOPE_RETURN_IF_ERROR(Quoted(text, &pos, line, key, &out->scalar));
      if (pos != text.size()) return ErrorAt(file_, line, key, "unexpected text after the closing quote");
      return Status::Ok();
    }
    if (text == "{}") {
      out->is_map = true;
      return Status::Ok();
    }
    switch (text[0]) {
      case '{':
      case '[':
        return ErrorAt(file_, line, key, "flow collections are not supported (write a block mapping)");
      case '|':
      case '>':
        return ErrorAt(file_, line, key, "block scalars are not supported (write the value on one line)");
      case '&':
      case '*':
      case '!':
        return ErrorAt(file_, line, key, "anchors, aliases and tags are not supported");
      case '-':
        if (text.size() == 1 || text[1] == ' ') return ErrorAt(file_, line, key, "lists are not supported here");
    }
    if (text == "~" || text == "null" || text == "Null" || text == "NULL") {
      out->is_null = true;
      return Status::Ok();
    }
    out->scalar = text;
    return Status::Ok();
  }

  // Reads the mapping whose keys are at column `indent`, from lines_[*i] on; `depth` 1 is the root.
  Status ReadBlock(size_t* i, int indent, const std::string& path, int depth, Node* map) {
    map->is_map = true;
    map->line = lines_[*i].no;
    if (depth > kMaxDepth) {
      return ErrorAt(file_, map->line, path, "nested deeper than " + std::to_string(kMaxDepth) + " mappings");
    }
    std::unordered_set<std::string> seen;
    while (*i < lines_.size()) {
      const Line& l = lines_[*i];
      if (l.indent < indent) return Status::Ok();
      if (l.indent > indent) return ErrorAt(file_, l.no, path, "unexpected indentation");
      if (l.text[0] == '-' && (l.text.size() == 1 || l.text[1] == ' ')) {
        return ErrorAt(file_, l.no, path, "lists are not supported (a mapping `key: value` was expected)");
      }
      std::string key;
      size_t pos = 0;
      if (l.text[0] == '\'' || l.text[0] == '"') {
        NCCLSCOPE_RETURN_IF_ERROR(Quoted(l.text, &pos, l.no, path, &key));
        if (pos >= l.text.size() || l.text[pos] != ':')
          return ErrorAt(file_, l.no, path, "expected ':' after the quoted key");
      } else {
        pos = l.text.find(": ");
        if (pos == std::string::npos && l.text.back() == ':') pos = l.text.size() - 1;
        if (pos == std::string::npos) return ErrorAt(file_, l.no, path, "expected `key: value`, got '" + l.text + "'");
        key = l.text.substr(0, pos);
        while (!key.empty() && key.back() == ' ') key.pop_back();
        if (key.empty()) return ErrorAt(file_, l.no, path, "empty key");
      }
      const std::string key_path = path.empty() ? key : path + "." + key;
      // A set, not a scan of the keys so far: a 1 MiB file of short keys would take quadratic time.
      if (!seen.insert(key).second) return ErrorAt(file_, l.no, key_path, "duplicate key");
      std::string rest = l.text.substr(pos + 1);
      rest.erase(0, rest.find_first_not_of(' '));
      Node value;
      ++*i;
      if (rest.empty()) {
        if (*i < lines_.size() && lines_[*i].indent > indent) {
          NCCLSCOPE_RETURN_IF_ERROR(ReadBlock(i, lines_[*i].indent, key_path, depth + 1, &value));
        } else {
          value.line = l.no;
          value.is_null = true;
        }
      } else {
        NCCLSCOPE_RETURN_IF_ERROR(Scalar(rest, l.no, key_path, &value));
      }
      map->map.emplace_back(key, std::move(value));
      map->key_lines.push_back(l.no);
    }
    return Status::Ok();
  }

  const std::string& file_;
  std::vector<std::pair<int, std::string>> raw_;
  std::vector<Line> lines_;
};

// ---- JSON ----

// The offset of the first '{' or '[' that opens a level deeper than kMaxDepth, or npos. Checked before
// nlohmann parses, so no reader ever recurses on a hostile file.
size_t TooDeepAt(const std::string& text, size_t from) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth) return i;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::string::npos;
}

// Line of the byte offset `pos` in `text`.
int LineOf(const std::string& text, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < text.size(); ++i) line += text[i] == '\n';
  return line;
}

Status FromJson(const nlohmann::json& j, const std::string& file, const std::string& path, Node* out) {
  out->line = 0;  // nlohmann keeps no positions
  if (j.is_object()) {
    out->is_map = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      Node child;
      NCCLSCOPE_RETURN_IF_ERROR(FromJson(it.value(), file, path.empty() ? it.key() : path + "." + it.key(), &child));
      out->map.emplace_back(it.key(), std::move(child));
      out->key_lines.push_back(0);
    }
  } else if (j.is_null()) {
    out->is_null = true;
  } else if (j.is_string()) {
    out->scalar = j.get<std::string>();
  } else if (j.is_boolean() || j.is_number()) {
    out->scalar = j.dump();
  } else {
    return ErrorAt(file, 0, path, "lists are not supported here");
  }
  return Status::Ok();
}

// ---- the schema ----

std::string Resolve(const std::string& file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const size_t slash = file.rfind('/');
  return slash == std::string::npos ? path : file.substr(0, slash + 1) + path;
}

class Schema {
 public:
  explicit Schema(const std::string& file) : file_(file) {}

  Result<WebConfig> Read(const Node& root) {
    WebConfig config;
    if (!root.is_map)
      return ErrorAt(file_, root.line, "", "the file must be a mapping (tls_server_config:, basic_auth_users:)");
    for (size_t k = 0; k < root.map.size(); ++k) {
      const auto& [key, value] = root.map[k];
      const int line = root.key_lines[k];
      if (key == "tls_server_config") {
        NCCLSCOPE_RETURN_IF_ERROR(ReadTls(value, line, &config));
      } else if (key == "basic_auth_users") {
        NCCLSCOPE_RETURN_IF_ERROR(ReadUsers(value, line, &config));
      } else if (key == "http_server_config") {
        NCCLSCOPE_RETURN_IF_ERROR(ReadHttp(value, line, &config));
      } else {
        return ErrorAt(file_, line, key,
                       "unknown key (expected tls_server_config, basic_auth_users or http_server_config)");
      }
    }
    return config;
  }

 private:
  Status NeedMap(const Node& n, int line, const std::string& key) {
    if (n.is_map || n.is_null) return Status::Ok();
    return ErrorAt(file_, line, key, "expected a mapping, got '" + n.scalar + "'");
  }

  Status NeedString(const Node& n, int line, const std::string& key, std::string* out) {
    if (n.is_map) return ErrorAt(file_, line, key, "expected a value, got a mapping");
    *out = n.is_null ? std::string() : n.scalar;
    return Status::Ok();
  }

  Status ReadTls(const Node& n, int line, WebConfig* config) {
    NCCLSCOPE_RETURN_IF_ERROR(NeedMap(n, line, "tls_server_config"));
    config->tls = true;
    TlsServerConfig& tls = config->tls_config;
    std::string auth_type;
    for (size_t k = 0; k < n.map.size(); ++k) {
      const auto& [key, value] = n.map[k];
      const int l = n.key_lines[k];
      const std::string path = "tls_server_config." + key;
      std::string s;
      if (key == "cert_file" || key == "key_file" || key == "client_ca_file" || key == "client_auth_type" ||
          key == "min_version" || key == "max_version") {
        NCCLSCOPE_RETURN_IF_ERROR(NeedString(value, l, path, &s));
      }
      if (key == "cert_file") {
        tls.cert_file = Resolve(file_, s);
      } else if (key == "key_file") {
        tls.key_file = Resolve(file_, s);
      } else if (key == "client_ca_file") {
        tls.client_ca_file = Resolve(file_, s);
      } else if (key == "client_auth_type") {
        auth_type = s;
        static const std::pair<const char*, ClientAuth> kTypes[] = {
            {"", ClientAuth::kNone},
            {"NoClientCert", ClientAuth::kNone},
            {"RequestClientCert", ClientAuth::kRequest},
            {"RequireAnyClientCert", ClientAuth::kRequireAny},
            {"VerifyClientCertIfGiven", ClientAuth::kVerifyIfGiven},
            {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerify}};
        bool found = false;
        for (const auto& [name, type] : kTypes) {
          if (s == name) {
            tls.client_auth = type;
            found = true;
          }
        }
        if (!found) {
          return ErrorAt(file_, l, path,
                         "'" + s +
                             "' is not one of NoClientCert, RequestClientCert, RequireAnyClientCert, "
                             "VerifyClientCertIfGiven, RequireAndVerifyClientCert");
        }
      } else if (key == "min_version" || key == "max_version") {
        static const std::pair<const char*, int> kVersions[] = {
            {"TLS10", 0x0301}, {"TLS11", 0x0302}, {"TLS12", 0x0303}, {"TLS13", 0x0304}};
        int v = -1;
        for (const auto& [name, version] : kVersions) {
          if (s == name) v = version;
        }
        if (s.empty()) v = key == "min_version" ? 0x0303 : 0;
        if (v < 0) return ErrorAt(file_, l, path, "'" + s + "' is not one of TLS10, TLS11, TLS12, TLS13");
        (key == "min_version" ? tls.min_version : tls.max_version) = v;
      } else if (key == "cert" || key == "key" || key == "cipher_suites" || key == "curve_preferences" ||
                 key == "prefer_server_cipher_suites" || key == "client_allowed_sans") {
        return ErrorAt(file_, l, path,
                       "not supported by ncclscope (supported: cert_file, key_file, client_auth_type, "
                       "client_ca_file, min_version, max_version)");
      } else {
        return ErrorAt(file_, l, path, "unknown key");
      }
    }
    if (tls.cert_file.empty() || tls.key_file.empty()) {
      return ErrorAt(file_, line, "tls_server_config",
                     std::string("missing ") + (tls.cert_file.empty() ? "cert_file" : "key_file") +
                         " (TLS was asked for: the endpoint stays off rather than serve plain HTTP)");
    }
    const bool verifies =
        tls.client_auth == ClientAuth::kVerifyIfGiven || tls.client_auth == ClientAuth::kRequireAndVerify;
    if (verifies && tls.client_ca_file.empty()) {
      return ErrorAt(file_, line, "tls_server_config", "client_auth_type " + auth_type + " needs client_ca_file");
    }
    if (!tls.client_ca_file.empty() && !verifies) {
      return ErrorAt(file_, line, "tls_server_config",
                     "client_ca_file is set but client_auth_type does not verify client certificates "
                     "(VerifyClientCertIfGiven or RequireAndVerifyClientCert)");
    }
    if (tls.max_version != 0 && tls.max_version < tls.min_version) {
      return ErrorAt(file_, line, "tls_server_config", "max_version is older than min_version");
    }
    return Status::Ok();
  }

  Status ReadUsers(const Node& n, int line, WebConfig* config) {
    NCCLSCOPE_RETURN_IF_ERROR(NeedMap(n, line, "basic_auth_users"));
    for (size_t k = 0; k < n.map.size(); ++k) {
      const auto& [user, value] = n.map[k];
      const int l = n.key_lines[k];
      const std::string path = "basic_auth_users." + user;
      std::string hash;
      NCCLSCOPE_RETURN_IF_ERROR(NeedString(value, l, path, &hash));
      if (user.find(':') != std::string::npos) return ErrorAt(file_, l, path, "a user name cannot hold ':'");
      if (Status valid = ValidateBcryptHash(hash); !valid.ok()) return ErrorAt(file_, l, path, valid.message());
      config->users[user] = hash;
    }
    return Status::Ok();
  }

  Status ReadHttp(const Node& n, int line, WebConfig* config) {
    NCCLSCOPE_RETURN_IF_ERROR(NeedMap(n, line, "http_server_config"));
    for (size_t k = 0; k < n.map.size(); ++k) {
      const std::string& key = n.map[k].first;
      if (key == "http2") continue;  // the endpoint speaks HTTP/1.1 whatever this says
      if (key != "headers") return ErrorAt(file_, n.key_lines[k], "http_server_config." + key, "unknown key");
      NCCLSCOPE_RETURN_IF_ERROR(ReadHeaders(n.map[k].second, n.key_lines[k], config));
    }
    return Status::Ok();
  }

  // The response headers exporter-toolkit lets a site set, with the values it allows (any when empty).
  Status ReadHeaders(const Node& n, int line, WebConfig* config) {
    static const std::map<std::string, std::vector<std::string>> kAllowed = {
        {"Content-Security-Policy", {}}, {"Strict-Transport-Security", {}},
        {"X-Content-Type-Options", {"nosniff"}}, {"X-Frame-Options", {"deny", "sameorigin"}},
        {"X-XSS-Protection", {}}};
    NCCLSCOPE_RETURN_IF_ERROR(NeedMap(n, line, "http_server_config.headers"));
    for (size_t k = 0; k < n.map.size(); ++k) {
      const auto& [name, value_node] = n.map[k];
      const int l = n.key_lines[k];
      const std::string path = "http_server_config.headers." + name;
      const auto allowed = kAllowed.find(name);
      if (allowed == kAllowed.end()) {
        return ErrorAt(file_, l, path, "this header cannot be configured (as in exporter-toolkit: "
                                       "Content-Security-Policy, Strict-Transport-Security, X-Content-Type-Options, "
                                       "X-Frame-Options, X-XSS-Protection)");
      }
      std::string value;
      NCCLSCOPE_RETURN_IF_ERROR(NeedString(value_node, l, path, &value));
      if (value.empty() || std::any_of(value.begin(), value.end(), [](char c) { return c < 0x20 || c == 0x7f; })) {
        return ErrorAt(file_, l, path, "the value must be one line of printable text");
      }
      std::string lower = value;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      const auto& values = allowed->second;
      if (!values.empty() && std::find(values.begin(), values.end(), lower) == values.end()) {
        std::string list;
        for (const auto& v : values) list += (list.empty() ? "" : ", ") + v;
        return ErrorAt(file_, l, path, "'" + value + "' is not allowed (one of: " + list + ")");
      }
      config->headers.emplace_back(name, value);
    }
    return Status::Ok();
  }

  const std::string& file_;
};

Result<WebConfig> Parse(const std::string& text, const std::string& file) {
  // JSON when the first significant character is '{'.
  size_t first = 0;
  int in_comment = 0;
  for (; first < text.size(); ++first) {
    const char c = text[first];
    if (in_comment) {
      in_comment = c != '\n';
    } else if (c == '#') {
      in_comment = 1;
    } else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
      break;
    }
  }
  Node root;
  if (first < text.size() && text[first] == '{') {
    if (const size_t deep = TooDeepAt(text, first); deep != std::string::npos) {
      return ErrorAt(file, LineOf(text, deep), "", "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(first), text.end());
    } catch (const nlohmann::json::parse_error& e) {
      return ErrorAt(file, LineOf(text, first + e.byte - 1), "", std::string("invalid JSON: ") + e.what());
    } catch (const nlohmann::json::exception& e) {  // out_of_range: a number such as 1e999
      return ErrorAt(file, 0, "", std::string("invalid JSON: ") + e.what());
    }
    NCCLSCOPE_RETURN_IF_ERROR(FromJson(j, file, "", &root));
  } else {
    Result<Node> r = YamlReader(text, file).Read();
    if (!r.ok()) return r.status();
    root = std::move(*r);
  }
  return Schema(file).Read(root);
}

}  // namespace

Result<WebConfig> ParseWebConfig(const std::string& text, const std::string& file) {
  // A bad file turns the endpoint off; nothing in it may reach the job as an exception.
  try {
    return Parse(text, file);
  } catch (const std::exception& e) {
    return ErrorAt(file, 0, "", std::string("cannot be read: ") + e.what());
  } catch (...) {
    return ErrorAt(file, 0, "", "cannot be read: unknown error");
  }
}

Result<WebConfig> LoadWebConfig(const std::string& file) {
  Result<std::string> text = ReadConfigFile("", file, {kMaxWebConfigBytes});
  if (!text.ok()) return text.status();
  return ParseWebConfig(*text, file);
}

}  // namespace ncclscope
