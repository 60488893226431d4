import Foundation
import Prometheus
import PushcampAPNsCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's own metrics, with the names Prometheus' client libraries use (`process_…`), read
/// when `/metrics` is scraped: CPU time, memory, file descriptors (open and the limit), start time.
/// A `serve` running out of descriptors shows here before it refuses connections.
final class ProcessMetrics: Sendable {
    private let cpu: Counter
    /// CPU seconds already counted: the counter moves by the difference.
    private let counted = Mutex<Double>(0)
    private let resident: Gauge
    private let virtual: Gauge
    private let openDescriptors: Gauge
    private let maxDescriptors: Gauge

    init(registry: PrometheusCollectorRegistry) {
        func gauge(_ name: String) -> Gauge { registry.makeGauge(descriptor: ServeMetrics.descriptor(name)) }
        cpu = registry.makeCounter(descriptor: ServeMetrics.descriptor("process_cpu_seconds_total"))
        resident = gauge("process_resident_memory_bytes")
        virtual = gauge("process_virtual_memory_bytes")
        openDescriptors = gauge("process_open_fds")
        maxDescriptors = gauge("process_max_fds")
        gauge("process_start_time_seconds").set(Self.startTime())
    }

    func update() {
        var usage = rusage()
        #if os(Linux)
        let who = RUSAGE_SELF.rawValue
        #else
        let who = RUSAGE_SELF
        #endif
        if getrusage(who, &usage) == 0 {
            let seconds =
                Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
                + Double(usage.ru_stime.tv_usec) / 1e6
            let step = counted.withLock { counted in
                defer { counted = max(counted, seconds) }
                return seconds - counted
            }
            if step > 0 { cpu.increment(by: step) }
        }
        maxDescriptors.set(Int64(ServeHTTP.descriptorLimit()))
        #if os(Linux)
        if let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) {
            let pages = statm.split(separator: " ").compactMap { Double($0) }
            let size = Double(sysconf(Int32(_SC_PAGESIZE)))
            if pages.count >= 2 {
                virtual.set(pages[0] * size)
                resident.set(pages[1] * size)
            }
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            openDescriptors.set(Double(entries.count))
        }
        #endif
    }

    /// When this process started (seconds since 1970): from the kernel's record of it on Linux, else
    /// when this value was first asked for.
    static func startTime() -> Double {
        #if os(Linux)
        // Field 22 of /proc/self/stat is the start in clock ticks after boot; `btime` in /proc/stat
        // is the boot. The command name (field 2) may hold spaces: count from its closing parenthesis.
        if let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")"),
            let system = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let boot = system.split(separator: "\n").first(where: { $0.hasPrefix("btime ") })
                .flatMap({ Double($0.dropFirst("btime ".count)) })
        {
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            // After the name: state is field 3, so field 22 is at index 22 - 3.
            if fields.count > 19, let ticks = Double(fields[19]) {
                return boot + ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
            }
        }
        #endif
        return SystemWallClock().now()
    }
}
