import FuzzSupport
import PushcampModel

/// A campaign file and a project file from the same bytes: parsed, read, every problem located.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(bytes(start, count))
    let (document, problems) = YAMLDocument.parse(input, path: "campaigns/fuzz.yaml")
    requireLocated(problems, "YAML")
    guard let document else { return 0 }
    let (_, campaignDiagnostics) = CampaignReader.read(document)
    requireLocated(campaignDiagnostics, "campaign")
    let (_, projectDiagnostics) = ProjectReader.read(document)
    requireLocated(projectDiagnostics, "project")
    return 0
}
