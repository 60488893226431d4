import Foundation
import PushcampTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Debian's tinyproxy on a loopback port of the test's own, asking for credentials, logging every
/// CONNECT. Stopped (and its folder removed) by `stop()`.
final class TinyProxy {
    let process = Process()
    let port: Int
    let folder: URL

    init(user: String, password: String) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("pushcamp-proxy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // tinyproxy started as root runs as nobody: its log folder is everyone's.
        chmod(folder.path, 0o777)
        port = try Self.freePort()
        let config = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 60
            LogFile "\(folder.path)/tinyproxy.log"
            LogLevel Connect
            MaxClients 50
            Allow 127.0.0.1
            BasicAuth \(user) \(password)
            """
        try config.write(to: folder.appendingPathComponent("tinyproxy.conf"), atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/tinyproxy")
        process.arguments = ["-d", "-c", folder.appendingPathComponent("tinyproxy.conf").path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let port = self.port
        guard ConsoleBrowserTests.eventually(10, { Self.accepts(port) }) else {
            kill(process.processIdentifier, SIGKILL)
            throw CLIError("tinyproxy did not start on port \(port)")
        }
    }

    /// The CONNECT requests it logged, as `host:port`.
    var tunnels: [String] {
        let log = (try? String(contentsOf: folder.appendingPathComponent("tinyproxy.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "): CONNECT ") else { return nil }
            return line[range.upperBound...].split(separator: " ").first.map(String.init)
        }
    }

    func stop() {
        // tinyproxy waits for its clients on SIGTERM (up to its Timeout): the test is done with it.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }

    static func accepts(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A loopback port nothing listens on now (the kernel's pick for a socket bound to port 0).
    static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw CLIError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Sending from a network whose only way out is an HTTP proxy: APNs, FCM and Google's token
/// endpoint each through a CONNECT tunnel of a real proxy, its credentials never printed.
@Suite("through an HTTPS proxy")
struct ProxyCLITests {
    @Test func bothProvidersGoThroughTheProxyAndItsPasswordIsNeverPrinted() throws {
        let proxy = try TinyProxy(user: "alice", password: "s3cr3t-pw")
        defer { proxy.stop() }
        let project = try TemporaryProject(projectFile: nil)
        defer { project.remove() }
        let sim = try SimulatorProcess(
            ["--state-dir", "sim", "--team-id", "ABCDE12345", "--key-id", "KEY1234567", "--topic", "com.example.shop"],
            in: project.root
        )
        defer { if sim.process.isRunning { _ = sim.stop() } }
        try AndroidCLITests.writeProject(project, port: sim.port)
        try AndroidCLITests.writeAudience(project, people: 10)
        try project.write("campaigns/mixed.yaml", AndroidCLITests.campaign)
        let url = "http://alice:s3cr3t-pw@127.0.0.1:\(proxy.port)"
        let target = "127.0.0.1:\(sim.port)"

        // HTTPS_PROXY: a tunnel for APNs, for FCM and for the token endpoint.
        var send = try CLI.run(
            ["send", "--quiet", "campaigns/mixed.yaml"],
            in: project.root,
            environment: ["HTTPS_PROXY": url]
        )
        #expect(send.status == 0, "\(send.stdout)\(send.stderr)")
        #expect(send.stdout.contains("delivered 15, failed 0"), "\(send.stdout)")
        #expect(proxy.tunnels.filter { $0 == target }.count >= 3, "\(proxy.tunnels)")

        // Refused credentials: the proxy and its answer are named, the password is not.
        send = try CLI.run(
            ["send", "--quiet", "--new-run", "campaigns/mixed.yaml"],
            in: project.root,
            environment: ["HTTPS_PROXY": "http://alice:wrong-pw@127.0.0.1:\(proxy.port)"]
        )
        #expect(send.status != 0)
        #expect(
            send.stdout.contains("the proxy http://127.0.0.1:\(proxy.port) refused a tunnel to \(target)"),
            "\(send.stdout)\(send.stderr)"
        )
        #expect(!(send.stdout + send.stderr).contains("wrong-pw"))

        // pushcamp.yaml's proxy: (from a variable), and NO_PROXY sending around a proxy that is not there.
        let projectFile = try String(contentsOf: project.root.appendingPathComponent("pushcamp.yaml"), encoding: .utf8)
        try project.write("pushcamp.yaml", projectFile + "\nproxy: ${env:CORP_PROXY}\n")
        let before = proxy.tunnels.count
        send = try CLI.run(
            ["send", "--quiet", "--new-run", "campaigns/mixed.yaml"],
            in: project.root,
            environment: ["CORP_PROXY": url]
        )
        #expect(send.stdout.contains("delivered 15, failed 0"), "\(send.stdout)\(send.stderr)")
        #expect(proxy.tunnels.count >= before + 3)
        try project.write("pushcamp.yaml", projectFile)
        send = try CLI.run(
            ["send", "--quiet", "--new-run", "campaigns/mixed.yaml"],
            in: project.root,
            environment: ["HTTPS_PROXY": "http://127.0.0.1:1", "NO_PROXY": "localhost,127.0.0.1"]
        )
        #expect(send.stdout.contains("delivered 15, failed 0"), "\(send.stdout)\(send.stderr)")

        // doctor checks through it too.
        let doctor = try CLI.run(["doctor"], in: project.root, environment: ["HTTPS_PROXY": url])
        #expect(doctor.status == 0, "\(doctor.stdout)\(doctor.stderr)")
        for output in [doctor.stdout, doctor.stderr] { #expect(!output.contains("s3cr3t-pw")) }
        _ = sim.stop()
    }
}
