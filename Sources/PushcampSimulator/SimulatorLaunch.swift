import Crypto
import Foundation
import PushcampAPNsCore
import PushcampFCMCore
import PushcampModel

/// A stand-alone simulator as `pushcamp sim` runs one: its credentials written into a state folder
/// for clients to read (the CA to trust, the provider-token key, a client certificate, a Firebase
/// service account pointing at the simulator), and the configuration they and a scenario make.
public struct SimulatorLaunch: Sendable {
    /// What the command line chose.
    public struct Options: Sendable {
        public var host = "127.0.0.1"
        public var port = 8443
        public var stateDir = ".pushcamp/sim"
        /// A `.p8` key to verify provider tokens with; nil writes a fresh one.
        public var keyFile: String?
        public var teamID: String?
        public var keyID: String?
        public var topic: String?
        public var clientCertificates = false
        public var fcmProject = FCMSimulation.defaultProjectID
        public var broadcastEnabled = true
        public var broadcastReason: String?
        public var scenario = SimulatorScenario()

        public init() {}
    }

    /// Why the simulator cannot be set up, said as `file: error: …` where a file is at fault.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public let options: Options
    public let configuration: SimulatorConfiguration
    public let caFile: String
    /// The provider-token key clients sign with: the one given, or the one written.
    public let keyFile: String
    public let clientFile: String?
    public var fcmFile: String { (options.stateDir as NSString).appendingPathComponent("fcm-service-account.json") }

    /// Generates the credentials and writes them into `options.stateDir`.
    public init(_ options: Options) throws {
        guard let address = IPv4Address(options.host) else {
            throw Failure(description: "error: --host takes an IPv4 address such as 127.0.0.1")
        }
        var credentials = try SimulatorCredentials.generate(addresses: options.host == "127.0.0.1" ? [] : [address])
        if let key = options.keyFile {
            do {
                credentials.signingKey = try P256.Signing.PrivateKey(
                    pemRepresentation: String(contentsOfFile: key, encoding: .utf8)
                )
            } catch {
                throw Failure(description: "\(key): error: not a P-256 private key in PEM form (an Apple .p8 key)")
            }
        }
        let (caFile, keyFile) = try credentials.write(to: options.stateDir)
        var configuration = SimulatorConfiguration(
            credentials: credentials,
            teamID: options.teamID,
            keyID: options.keyID,
            bundleID: options.topic
        )
        configuration.port = options.port
        configuration.host = options.host
        // Channels outlive the simulator, as Apple's do.
        configuration.channelsFile = (options.stateDir as NSString).appendingPathComponent("channels.json")
        configuration.broadcast.enabled = options.broadcastEnabled
        configuration.broadcast.forcedReason = options.broadcastReason.map(APNsReason.init)
        configuration.fcm = FCMSimulation(
            account: try FCMSimulation.generateAccount(
                projectID: options.fcmProject,
                tokenURI: "https://\(options.host):\(options.port)/token"
            )
        )
        options.scenario.apply(to: &configuration)
        var clientFile: String?
        if options.clientCertificates {
            configuration.acceptsClientCertificates = true
            let file = (options.stateDir as NSString).appendingPathComponent("client.pem")
            // Its private key with it: the owner's alone.
            try SimulatorCredentials.writePrivate(
                credentials.clientCertificatePEM(topic: options.topic ?? "com.example.app"),
                to: file
            )
            clientFile = file
        }
        self.options = options
        self.configuration = configuration
        self.caFile = caFile
        self.keyFile = options.keyFile ?? keyFile
        self.clientFile = clientFile
    }

    /// Starts `simulator` listening and writes its FCM service account (the token endpoint is the
    /// simulator's own); returns the port it listens on.
    public func start(_ simulator: APNsSimulator) async throws -> Int {
        let bound = try await simulator.start()
        if let fcm = simulator.fcm {
            // A private key: the owner's alone, as a downloaded key file should be.
            try SimulatorCredentials.writePrivate(fcm.account.json, to: fcmFile)
        }
        return bound
    }

    /// What `pushcamp sim` prints once it listens on `port`: where it is and what clients read.
    public func banner(port: Int) -> String {
        var lines = [
            "pushcamp sim: listening on https://\(options.host):\(port)",
            "  trust:  \(caFile)",
            "  key:    \(keyFile)",
        ]
        if let clientFile { lines.append("  client certificate: \(clientFile)") }
        lines.append("  fcm:    \(fcmFile) (project \(options.fcmProject))")
        return lines.joined(separator: "\n") + "\n"
    }

    /// What `pushcamp sim` prints when it stops: the summary of what `simulator` received.
    public func farewell(_ simulator: APNsSimulator) -> String {
        var text = simulator.recorder.summaryText(verifier: configuration.verifier)
        if let fcm = simulator.fcm, fcm.accessTokensIssued > 0 {
            text += "fcm access tokens: \(fcm.accessTokensIssued) issued\n"
        }
        return text
    }
}

extension SimulatorRecorder {
    /// Writes what was received to the files asked for: device pushes as CSV, broadcast API
    /// requests and FCM sends one JSON object a line.
    public func export(devices: String?, broadcast: String?, fcm: String?) throws {
        if let devices { try deviceCSV().write(toFile: devices, atomically: true, encoding: .utf8) }
        if let broadcast { try broadcastLines().write(toFile: broadcast, atomically: true, encoding: .utf8) }
        if let fcm { try fcmLines().write(toFile: fcm, atomically: true, encoding: .utf8) }
    }
}
