// A small C++ application using the C client (include/licensing.h), as docs/clients/c.md shows it.
//
// Online, against a service (each option also from the environment, as `npm run interop` runs it):
//   licensing-example --url https://licensing.example.com      (LICENSING_URL)
//                     --user-key XXXXX-...                     (LICENSING_USER_KEY)
//                     --product my-product                     (LICENSING_PRODUCT)
//                     [--machine PC-1]                         (LICENSING_MACHINE; default: this computer's id)
//                     [--state ~/.config/my-app/licensing]     (LICENSING_STATE)
//                     [--floating-key XXXXX-...]               (LICENSING_FLOATING_KEY: a floating license)
//                     [--ca cert.pem]                          (LICENSING_CA)
//                     [--version 1.0.0] [--platform linux-x64]
//   records this run as a session, activates, validates (with offline grace from --state), holds a floating seat
//   with heartbeats from a thread, checks out a license file and verifies it offline, and checks for an update.
// Offline (what CTest runs on the shared vectors):
//   licensing-example --offline --file license.lic --jwks jwks.json --machine PC-1 --product my-product
//                     --user-key XXXXX-... [--now 2026-01-01T00:00:00Z]
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "licensing.h"

namespace {

// Owning handles: the C library's free functions as deleters.
struct ClientDeleter {
    void operator()(licensing_client *c) const { licensing_client_free(c); }
};
struct ValidationDeleter {
    void operator()(licensing_validation *v) const { licensing_validation_free(v); }
};
struct LicenseDeleter {
    void operator()(licensing_license *l) const { licensing_license_free(l); }
};
struct GrantDeleter {
    void operator()(licensing_grant *g) const { licensing_grant_free(g); }
};
struct UpdateDeleter {
    void operator()(licensing_update *u) const { licensing_update_free(u); }
};
struct StringDeleter {
    void operator()(char *s) const { licensing_free(s); }
};
using Client = std::unique_ptr<licensing_client, ClientDeleter>;
using String = std::unique_ptr<char, StringDeleter>;

// A refusal as a C++ exception: its CONTRACT 14 code and message.
struct Refused : std::runtime_error {
    std::string code;
    Refused(const std::string &c, const std::string &message) : std::runtime_error(message), code(c) {}
};

void check(licensing_client *c, int status) {
    if (status != LICENSING_OK) throw Refused(licensing_last_code(c), licensing_last_error(c));
}

std::string iso(int64_t ms) {
    if (ms == 0) return "never";
    char buffer[32];
    licensing_format_time(ms, buffer, sizeof buffer);
    return buffer;
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

void print_license(const licensing_license &l) {
    std::printf("  license %s (%s, %s%s%s), product %s, machine %s\n", l.license_id,
                l.licensing_mode ? l.licensing_mode : "?", l.license_type ? l.license_type : "?",
                l.edition ? ", " : "", l.edition ? l.edition : "", l.product_code ? l.product_code : "(any)",
                l.machine_id ? l.machine_id : "(any)");
    std::printf("  valid until %s; the license expires %s\n", iso(l.expires_at).c_str(),
                iso(l.license_expire_at).c_str());
    for (size_t i = 0; i < l.feature_count; i++) std::printf("  feature: %s\n", l.features[i]);
}

int offline(std::map<std::string, std::string> &o) {
    Client client;
    {
        licensing_client *raw = nullptr;
        if (licensing_client_new(nullptr, &raw) != LICENSING_OK) return 2;
        client.reset(raw);
    }
    licensing_client *c = client.get();
    // The key set shipped with the application: nothing is fetched, nothing trusted from the network.
    check(c, licensing_set_trusted_keys(c, read_file(o["jwks"]).c_str()));
    check(c, licensing_set_product(c, o["product"].c_str()));
    check(c, licensing_set_user_key(c, o["user-key"].c_str()));
    if (!o["now"].empty()) {
        int64_t now = 0;
        if (licensing_parse_time(o["now"].c_str(), &now) != LICENSING_OK) throw std::runtime_error("--now");
        check(c, licensing_set_clock(c, now));
    }
    licensing_check chk = {};
    chk.machine_id = o["machine"].c_str();
    licensing_license *raw = nullptr;
    check(c, licensing_verify_license_file(c, read_file(o["file"]).c_str(), &chk, &raw));
    std::unique_ptr<licensing_license, LicenseDeleter> license(raw);
    std::printf("license file verified offline%s:\n", license->encrypted ? " (and decrypted)" : "");
    print_license(*license);
    return 0;
}

Client make_client(std::map<std::string, std::string> &o, const std::string &user_key) {
    licensing_client *raw = nullptr;
    if (licensing_client_new(o["url"].c_str(), &raw) != LICENSING_OK) throw std::runtime_error("bad --url");
    Client client(raw);
    licensing_client *c = client.get();
    check(c, licensing_set_user_key(c, user_key.c_str()));
    check(c, licensing_set_product(c, o["product"].c_str()));
    check(c, licensing_set_app_version(c, o["version"].c_str()));
    if (!o["ca"].empty()) check(c, licensing_set_ca_file(c, o["ca"].c_str()));
    return client;
}

// A floating seat held while it lives: requested, kept by a heartbeat every heartbeat_interval seconds from its own
// thread (with its own client handle: a handle is not thread-safe), released when it goes.
class FloatingSeat {
  public:
    FloatingSeat(Client client, const std::string &machine, const std::string &client_id) : client_(std::move(client)) {
        licensing_grant *g = nullptr;
        check(client_.get(), licensing_seat_request(client_.get(), machine.c_str(), client_id.c_str(), &g));
        grant_.reset(g);
        interval_ = std::chrono::seconds(grant_->heartbeat_interval > 0 ? grant_->heartbeat_interval : 60);
        thread_ = std::thread([this] { beat(); });
    }
    ~FloatingSeat() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        thread_.join();
        std::lock_guard<std::mutex> lock(mutex_);
        if (licensing_seat_release(client_.get(), grant_->license_token, nullptr) != LICENSING_OK)
            std::fprintf(stderr, "release: %s\n", licensing_last_error(client_.get()));
    }
    const licensing_grant &grant() const { return *grant_; }
    // One heartbeat now (the thread sends them on its own; this shows one at once).
    void heartbeat_now() {
        std::lock_guard<std::mutex> lock(mutex_);
        check(client_.get(), licensing_seat_heartbeat(client_.get(), grant_->license_token, nullptr));
    }

  private:
    void beat() {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
            if (licensing_seat_heartbeat(client_.get(), grant_->license_token, nullptr) != LICENSING_OK)
                // seatsExhausted / licenseTokenNotFound: the seat was lost (reclaimed after missed heartbeats).
                std::fprintf(stderr, "heartbeat refused (%s): %s\n", licensing_last_code(client_.get()),
                             licensing_last_error(client_.get()));
        }
    }
    Client client_;
    std::unique_ptr<licensing_grant, GrantDeleter> grant_;
    std::chrono::seconds interval_{60};
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;
    std::thread thread_;
};

int online(std::map<std::string, std::string> &o) {
    if (o["url"].empty() || o["user-key"].empty() || o["product"].empty())
        throw std::runtime_error("--url, --user-key and --product (or LICENSING_URL, ...) are required");
    if (o["machine"].empty()) {
        char *id = nullptr;
        if (licensing_machine_id(o["product"].c_str(), &id) != LICENSING_OK) throw std::runtime_error("no machine id");
        o["machine"] = id;
        licensing_free(id);
    }
    Client client = make_client(o, o["user-key"]);
    licensing_client *c = client.get();
    if (!o["state"].empty()) check(c, licensing_set_state_dir(c, o["state"].c_str()));
    const char *machine = o["machine"].c_str();

    // This run, as a session (kept in the state directory until the service takes it; a crash handler would call
    // licensing_session_end(c, "crashed", 0)).
    if (!o["state"].empty()) check(c, licensing_session_start(c, o["version"].c_str(), o["platform"].c_str()));

    licensing_grant *g = nullptr;
    check(c, licensing_activate(c, machine, nullptr, &g));
    std::unique_ptr<licensing_grant, GrantDeleter> grant(g);
    std::printf("activated %s on %s (%d of %d machines)\n", grant->license_id, machine, grant->active_client_count,
                grant->max_client_count);

    // At each start: online the signed answer is verified and kept; offline the kept one, within its grace.
    licensing_validation *v = nullptr;
    check(c, licensing_validate(c, machine, nullptr, &v));
    std::unique_ptr<licensing_validation, ValidationDeleter> validation(v);
    std::printf("validated %s (usable offline until %s):\n", validation->offline ? "offline, within the grace" : "online",
                iso(validation->grace_until).c_str());
    print_license(*validation->license);

    if (!o["floating-key"].empty()) {
        FloatingSeat seat(make_client(o, o["floating-key"]), machine, "example");
        std::printf("floating seat of %s held (%d of %d), heartbeat every %d s\n", seat.grant().license_id,
                    seat.grant().active_client_count, seat.grant().max_client_count, seat.grant().heartbeat_interval);
        seat.heartbeat_now();
    }  // released here

    char *file = nullptr;
    int64_t expires = 0;
    check(c, licensing_checkout(c, machine, nullptr, 1, &file, &expires));
    String license_file(file);
    licensing_check chk = {};
    chk.machine_id = machine;
    licensing_license *l = nullptr;
    check(c, licensing_verify_license_file(c, license_file.get(), &chk, &l));
    std::unique_ptr<licensing_license, LicenseDeleter> verified(l);
    std::printf("license file checked out until %s, verified (and decrypted) offline\n", iso(expires).c_str());

    licensing_update *u = nullptr;
    check(c, licensing_check_update(c, o["version"].c_str(), o["platform"].c_str(), nullptr, &u));
    std::unique_ptr<licensing_update, UpdateDeleter> update(u);
    if (update->available)
        std::printf("update %s available%s: %s\n", update->version, update->required ? " (required)" : "",
                    update->download_url ? update->download_url : "");
    else
        std::printf("up to date\n");

    if (!o["state"].empty()) check(c, licensing_session_end(c, "exited", 1));
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    std::map<std::string, std::string> o = {{"version", "1.0.0"}, {"platform", "win-x64"}};
    const std::map<std::string, const char *> environment = {
        {"url", "LICENSING_URL"},     {"product", "LICENSING_PRODUCT"},           {"user-key", "LICENSING_USER_KEY"},
        {"machine", "LICENSING_MACHINE"}, {"floating-key", "LICENSING_FLOATING_KEY"}, {"ca", "LICENSING_CA"},
        {"state", "LICENSING_STATE"}};
    for (const auto &e : environment)
        if (const char *value = std::getenv(e.second)) o[e.first] = value;
    bool offline_mode = false;
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--offline") {
            offline_mode = true;
        } else if (arg.rfind("--", 0) == 0 && i + 1 < argc) {
            o[arg.substr(2)] = argv[++i];
        } else {
            std::fprintf(stderr, "usage: licensing-example [--offline] --machine M --product P --user-key K ...\n");
            return 2;
        }
    }
    try {
        return offline_mode ? offline(o) : online(o);
    } catch (const Refused &r) {
        std::fprintf(stderr, "refused (%s): %s\n", r.code.c_str(), r.what());
        return 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
}
