import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A network namespace of the test's own (`ip netns`), joined to the test's by veth pairs, one
/// per link, each a /30 of 10.231.0.0/16 picked at random: a second host whose links can be cut
/// like a cable (the far end set down: packets vanish, connections hang, nothing is refused).
/// Needs root; `remove()` deletes the namespace and its links.
public final class TestNetwork: Sendable {
    public struct Link: Sendable {
        /// The interface on the test's side, and its address.
        public let hostInterface: String
        public let hostAddress: String
        /// The interface in the namespace, and its address.
        public let farInterface: String
        public let farAddress: String
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public let namespace: String
    public let links: [Link]

    /// A namespace with `count` links to this one.
    public init(links count: Int) throws {
        guard getuid() == 0 else {
            throw Failure(description: "a partition test needs root, for ip netns and veth pairs")
        }
        let tag = String(UInt32.random(in: 0..<0x10_0000), radix: 16)
        namespace = "pushcamp-\(tag)"
        let subnet = Int.random(in: 0..<256)
        links = (0..<count).map { index in
            Link(
                hostInterface: "pc\(tag)h\(index)",
                hostAddress: "10.231.\(subnet).\(index * 4 + 1)",
                farInterface: "pc\(tag)n\(index)",
                farAddress: "10.231.\(subnet).\(index * 4 + 2)"
            )
        }
        do {
            try Self.ip("netns", "add", namespace)
            try ip(inside: "link", "set", "lo", "up")
            for link in links {
                try Self.ip("link", "add", link.hostInterface, "type", "veth", "peer", "name", link.farInterface)
                try Self.ip("link", "set", link.farInterface, "netns", namespace)
                try Self.ip("addr", "add", link.hostAddress + "/30", "dev", link.hostInterface)
                try Self.ip("link", "set", link.hostInterface, "up")
                try ip(inside: "addr", "add", link.farAddress + "/30", "dev", link.farInterface)
                try ip(inside: "link", "set", link.farInterface, "up")
            }
        } catch {
            remove()
            throw error
        }
    }

    /// Cuts link `index` at the far end: what crosses it from now on is lost.
    public func cut(_ index: Int) throws { try ip(inside: "link", "set", links[index].farInterface, "down") }

    /// Joins link `index` again.
    public func mend(_ index: Int) throws { try ip(inside: "link", "set", links[index].farInterface, "up") }

    /// Deletes the namespace (and with it both ends of every link).
    public func remove() {
        _ = try? Self.ip("netns", "delete", namespace)
        for link in links { _ = try? Self.ip("link", "delete", link.hostInterface) }
    }

    private func ip(inside arguments: String...) throws {
        try Self.run(["netns", "exec", namespace, "ip"] + arguments)
    }

    private static func ip(_ arguments: String...) throws { try run(arguments) }

    private static func run(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let said = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "ip \(arguments.joined(separator: " ")): \(String(decoding: said, as: UTF8.self))"
            )
        }
    }
}
