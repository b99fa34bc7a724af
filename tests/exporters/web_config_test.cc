// The web config reader (NCCLSCOPE_PROM_WEB_CONFIG): the YAML subset exporter-toolkit files use and JSON give
// the same config, and every bad file is refused with a message that names the file, the line and the key.
#include "exporters/http/web_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include "temp_dir.h"

namespace ncclscope {
namespace {

const std::string kHash = "$2y$10$uuNgjB5ODh3cRHdzAEIlG.3fb/N1a0a1QXomqKCSypO7UMUZU7jcm";  // any valid shape
const std::string kFile = "/etc/ncclscope/web.yml";

TEST(WebConfig, ReadsTheYamlSubsetExporterToolkitFilesUse) {
  const std::string text =
      "---\n"
      "# TLS for the metrics endpoint\n"
      "tls_server_config:\n"
      "  cert_file: server.crt   # relative to the file's directory\n"
      "  key_file: \"/abs/server.key\"\n"
      "  client_auth_type: 'RequireAndVerifyClientCert'\n"
      "  client_ca_file: ca dir/ca.crt\n"
      "  min_version: TLS13\n"
      "\n"
      "http_server_config:\n"
      "    http2: false\n"
      "basic_auth_users:\n"
      "  prometheus: " +
      kHash +
      "\n"
      "  'o''brien': \"" +
      kHash +
      "\"\n"
      "...\n";
  Result<WebConfig> c = ParseWebConfig(text, kFile);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->tls);
  EXPECT_EQ(c->tls_config.cert_file, "/etc/ncclscope/server.crt");
  EXPECT_EQ(c->tls_config.key_file, "/abs/server.key");
  EXPECT_EQ(c->tls_config.client_ca_file, "/etc/ncclscope/ca dir/ca.crt");
  EXPECT_EQ(c->tls_config.client_auth, ClientAuth::kRequireAndVerify);
  EXPECT_EQ(c->tls_config.min_version, 0x0304);
  ASSERT_EQ(c->users.size(), 2u);
  EXPECT_EQ(c->users["prometheus"], kHash);
  EXPECT_EQ(c->users["o'brien"], kHash);
}

TEST(WebConfig, JsonGivesTheSameConfig) {
  const std::string text =
      "# comment\n{\"tls_server_config\": {\"cert_file\": \"a.crt\", \"key_file\": \"a.key\"},\n"
      " \"basic_auth_users\": {\"prometheus\": \"" +
      kHash + "\"}}\n";
  Result<WebConfig> c = ParseWebConfig(text, kFile);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->tls);
  EXPECT_EQ(c->tls_config.cert_file, "/etc/ncclscope/a.crt");
  EXPECT_EQ(c->tls_config.min_version, 0x0303);  // TLS 1.2 by default, as exporter-toolkit
  EXPECT_EQ(c->users.size(), 1u);
}

TEST(WebConfig, AnEmptyFileMeansNeitherTlsNorAuth) {
  for (const char* text : {"", "# nothing\n\n", "{}\n", "---\n"}) {
    Result<WebConfig> c = ParseWebConfig(text, kFile);
    ASSERT_TRUE(c.ok()) << "'" << text << "': " << c.status().message();
    EXPECT_FALSE(c->tls);
    EXPECT_TRUE(c->users.empty());
  }
  Result<WebConfig> c = ParseWebConfig("basic_auth_users:\n  u: " + kHash + "\n", kFile);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->tls);  // basic auth over plain HTTP is allowed, as in exporter-toolkit
}

struct BadCase {
  std::string text;
  std::string message;  // expected in the error, after "<file>:"
};

TEST(WebConfig, EveryBadFileIsRefusedWithFileLineAndKey) {
  const std::string tls = "tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n";
  const BadCase cases[] = {
      {"tls_server_config:\n\tcert_file: a\n", "2: tab in indentation"},
      {"tls_config:\n  cert_file: a\n", "1: tls_config: unknown key"},
      {tls + "  cert_path: x\n", "4: tls_server_config.cert_path: unknown key"},
      {tls + "  cipher_suites: x\n", "4: tls_server_config.cipher_suites: not supported by ncclscope"},
      {tls + "  cipher_suites:\n    - TLS_AES_128_GCM_SHA256\n",
       "5: tls_server_config.cipher_suites: lists are not supported"},
      {"tls_server_config:\n  cert_file: a.crt\n", "1: tls_server_config: missing key_file"},
      {"tls_server_config:\n", "1: tls_server_config: missing cert_file"},
      {"tls_server_config: {}\n", "1: tls_server_config: missing cert_file"},
      {tls + "  client_auth_type: RequireClientCert\n",
       "4: tls_server_config.client_auth_type: 'RequireClientCert' is not one of"},
      {tls + "  min_version: TLS14\n",
       "4: tls_server_config.min_version: 'TLS14' is not one of TLS10, TLS11, TLS12, TLS13"},
      {tls + "  min_version: TLS13\n  max_version: TLS12\n", "1: tls_server_config: max_version is older"},
      {tls + "  client_auth_type: VerifyClientCertIfGiven\n",
       "1: tls_server_config: client_auth_type VerifyClientCertIfGiven needs client_ca_file"},
      {tls + "  client_ca_file: ca.crt\n", "1: tls_server_config: client_ca_file is set but"},
      {tls + "  cert_file: b.crt\n", "4: tls_server_config.cert_file: duplicate key"},
      {"tls_server_config:\n  cert_file: a.crt\n  key_file:\n    a: b\n",
       "3: tls_server_config.key_file: expected a value, got a mapping"},
      {"tls_server_config: yes\n", "1: tls_server_config: expected a mapping, got 'yes'"},
      {"basic_auth_users:\n  alice: secret\n", "2: basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: $1$abc$def\n", "2: basic_auth_users.alice: not a bcrypt hash"},
      {"basic_auth_users:\n  alice: '" + kHash.substr(0, 59) + "'\n", "2: basic_auth_users.alice: not a bcrypt hash"},
      // Before 2026-11-27: a salt whose last character sets bits bcrypt never sets loaded, and no login matched.
      {"basic_auth_users:\n  alice: " + kHash.substr(0, 28) + "H" + kHash.substr(29) + "\n",
       "2: basic_auth_users.alice: not a bcrypt hash: the last character of the salt sets padding bits"},
      {"basic_auth_users:\n  \"a:b\": " + kHash + "\n", "2: basic_auth_users.a:b: a user name cannot hold ':'"},
      {"basic_auth_users:\n  alice: \"" + kHash + "\n", "2: basic_auth_users.alice: unterminated quoted string"},
      {"basic_auth_users:\n  alice: '" + kHash + "' x\n",
       "2: basic_auth_users.alice: unexpected text after the closing quote"},
      {"basic_auth_users:\n  alice: " + kHash + "\n    bob: " + kHash + "\n",
       "3: basic_auth_users: unexpected indentation"},
      {"basic_auth_users:\n  alice " + kHash + "\n", "2: basic_auth_users: expected `key: value`"},
      {"basic_auth_users: {alice: x}\n", "1: basic_auth_users: flow collections are not supported"},
      {"basic_auth_users:\n  alice: |\n    x\n", "2: basic_auth_users.alice: block scalars are not supported"},
      {"basic_auth_users:\n  alice: *hash\n", "2: basic_auth_users.alice: anchors, aliases and tags"},
      {"- tls_server_config\n", "1: lists are not supported"},
      {"http_server_config:\n  headers:\n    X-Powered-By: me\n",
       "3: http_server_config.headers.X-Powered-By: this header cannot be configured"},
      {"http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
       "3: http_server_config.headers.X-Frame-Options: 'allow' is not allowed (one of: deny, sameorigin)"},
      {"{\"http_server_config\": {\"headers\": {\"X-Frame-Options\": \"deny\\r\\nX-Evil: 1\"}}}\n",
       " http_server_config.headers.X-Frame-Options: the value must be one line of printable text"},
      {"{\"tls_server_config\": {\"cert_file\": \"a\",\n \"key_file\": }}\n", "2: invalid JSON"},
      {"{\"tls_server_config\": {\"cert_file\": \"a\", \"key_file\": \"b\", \"bogus\": 1}}\n",
       " tls_server_config.bogus: unknown key"},  // nlohmann keeps no line numbers
  };
  for (const BadCase& c : cases) {
    Result<WebConfig> r = ParseWebConfig(c.text, kFile);
    ASSERT_FALSE(r.ok()) << "accepted:\n" << c.text;
    const std::string expected = kFile + ":" + c.message;
    EXPECT_NE(r.status().message().find(expected), std::string::npos)
        << "file:\n"
        << c.text << "error:    " << r.status().message() << "\nexpected: " << expected;
  }
}

// The example file of docs/endpoint-security.md is one the reader takes.
TEST(WebConfig, TheDocumentedExampleParses) {
  std::ifstream in(std::string(NCCLSCOPE_SOURCE_DIR) + "/docs/endpoint-security.md");
  ASSERT_TRUE(in.good());
  std::string line, yaml;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```yaml" && yaml.empty()) {
      inside = true;
    } else if (inside && line == "```") {
      break;
    } else if (inside) {
      yaml += line + "\n";
    }
  }
  ASSERT_NE(yaml.find("tls_server_config"), std::string::npos) << yaml;
  Result<WebConfig> c = ParseWebConfig(yaml, "/etc/ncclscope/web.yml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->tls);
  EXPECT_EQ(c->tls_config.cert_file, "/etc/ncclscope/server.crt");
  EXPECT_EQ(c->users.count("prometheus"), 1u);
}

TEST(WebConfig, AMissingFileIsNamed) {
  Result<WebConfig> r = LoadWebConfig("/nonexistent/web.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "/nonexistent/web.yml: cannot open: No such file or directory");
}

// Before 2026-11-27, 600 KB of nested `{"a":` recursed without bound and killed every rank with SIGSEGV.
TEST(WebConfig, DeepNestingIsRefusedNotRecursedInto) {
  std::string json;
  for (int i = 0; i < 120'000; ++i) json += "{\"a\":";
  json += "1" + std::string(120'000, '}');  // complete: nlohmann accepts it, the reader must not recurse
  Result<WebConfig> r = ParseWebConfig(json, "deep.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "deep.yml:1: nested deeper than 8 levels");

  std::string yaml;
  for (int i = 0; i < 2'000; ++i) yaml += std::string(i, ' ') + "a:\n";
  r = ParseWebConfig(yaml, "deep.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("deep.yml:9: a.a.a.a.a.a.a.a: nested deeper than 8 mappings"),
            std::string::npos)
      << r.status().message();
  // A string holding braces is not nesting.
  r = ParseWebConfig("{\"basic_auth_users\": {\"u{{{{{{{{{{{{\": \"x\"}}", "j.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a bcrypt hash"), std::string::npos) << r.status().message();
}

// Before 2026-11-27, nlohmann's out_of_range escaped the parser and failed the net plugin's init.
TEST(WebConfig, EveryJsonErrorIsAnErrorNotAnException) {
  for (const char* text : {"{\"basic_auth_users\":{\"prom\":1e999}}", "{\"a\": -1e400}", "{\"a\": \"\\ud800\"}"}) {
    Result<WebConfig> r = ParseWebConfig(text, "web.json");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("invalid JSON: "), std::string::npos) << r.status().message();
  }
}

// Before 2026-11-27, a directory read as an empty config (plain HTTP, no auth), /dev/zero ran the
// process out of memory and a FIFO blocked init. All three are refused at once, naming what they are.
TEST(WebConfig, APathThatIsNotARegularFileIsRefused) {
  testing::ScopedTempDir dir;
  const std::string fifo = dir.path() + "/web.yml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const std::pair<std::string, std::string> cases[] = {
      {dir.path(), dir.path() + ": is a directory, not a regular file"},
      {fifo, fifo + ": is a FIFO, not a regular file"},
      {"/dev/zero", "/dev/zero: is a character device, not a regular file"}};
  for (const auto& [path, error] : cases) {
    Result<WebConfig> r = LoadWebConfig(path);
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.status().message(), error);
  }
  const std::string big = dir.path() + "/big.yml";
  std::ofstream(big) << std::string((1 << 20) + 1, '#');
  Result<WebConfig> r = LoadWebConfig(big);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("over the 1048576-byte limit"), std::string::npos) << r.status().message();
}

TEST(WebConfig, ErrorsQuoteAtMostAShortPrintableExcerpt) {
  Result<WebConfig> r = ParseWebConfig(std::string(100'000, 'k') + "\x01\n", "web.yml");
  ASSERT_FALSE(r.ok());
  EXPECT_LT(r.status().message().size(), 400u);
  EXPECT_EQ(r.status().message().find('\x01'), std::string::npos);
}

TEST(WebConfig, LoadsAFile) {
  char path[] = "/tmp/ncclscope-webcfg-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << "basic_auth_users:\n  alice: " << kHash << "\r\n";  // CRLF is fine too
  Result<WebConfig> r = LoadWebConfig(path);
  std::remove(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->users["alice"], kHash);
}

// http_server_config.headers: the names and values exporter-toolkit allows, kept in file order for every response.
TEST(WebConfig, HonoursTheResponseHeadersExporterToolkitAllows) {
  const std::string text =
      "http_server_config:\n"
      "  http2: true\n"
      "  headers:\n"
      "    X-Frame-Options: SAMEORIGIN\n"
      "    Content-Security-Policy: \"default-src 'self'\"\n"
      "    Strict-Transport-Security: max-age=31536000\n";
  Result<WebConfig> c = ParseWebConfig(text, kFile);
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->headers.size(), 3u);
  EXPECT_EQ(c->headers[0], std::make_pair(std::string("X-Frame-Options"), std::string("SAMEORIGIN")));
  EXPECT_EQ(c->headers[1].second, "default-src 'self'");
  EXPECT_EQ(c->headers[2].first, "Strict-Transport-Security");
}

}  // namespace
}  // namespace ncclscope
