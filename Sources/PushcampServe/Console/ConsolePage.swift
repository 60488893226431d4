import PushcampJournal
import PushcampModel
import PushcampReport

/// The console's pages as HTML: server-rendered, self-contained (no external assets: it works
/// offline), readable on a phone, with a little JavaScript that refreshes the runs and the health
/// from `/api/runs` and `/api/health` every two seconds, without reloading the page. Pure: the
/// routes read the journal and hand the values here.
public struct ConsolePage: Sendable {
    public var status: ProjectStatus
    public var runs: RunListing
    public var schedules: ScheduleListing
    public var notifications: NotificationListing
    public var firings: FiringListing
    public var ready: Bool
    public var health: String

    public init(
        status: ProjectStatus,
        runs: RunListing,
        schedules: ScheduleListing,
        notifications: NotificationListing,
        firings: FiringListing,
        ready: Bool,
        health: String
    ) {
        self.status = status
        self.runs = runs
        self.schedules = schedules
        self.notifications = notifications
        self.firings = firings
        self.ready = ready
        self.health = health
    }

    static func escape(_ text: String) -> String { HTML.escape(text) }

    /// A run's tone for its status badge.
    static func tone(_ status: RunStatus) -> String {
        switch status {
        case .finished: return "good"
        case .running: return "info"
        case .interrupted: return "warn"
        case .cancelled, .superseded: return "bad"
        default: return "info"
        }
    }

    static func page(title: String, body: String, script: String = "") -> String {
        """
        <!doctype html><html lang="en"><head><meta charset="utf-8">\
        <meta name="viewport" content="width=device-width,initial-scale=1"><title>\(escape(title))</title>\
        <style>\(HTML.style)\(style)</style></head><body>\(body)\
        \(script.isEmpty ? "" : "<script>\(script)</script>")</body></html>

        """
    }

    static let style = """
        progress{width:120px;height:10px;vertical-align:middle}header{margin-bottom:8px}
        pre{white-space:pre-wrap;font-size:12px;background:#f6f7f9;padding:8px;border-radius:6px;margin:0}
        a{color:#1f4f96}section{margin-top:24px}.pair{margin-top:0}
        .spark{width:80px;height:20px;vertical-align:middle}.spark rect{fill:#1f4f96}
        @media (max-width:640px){progress{width:56px}.wide{display:none}}
        """

    /// One row of the runs table, as the script builds it too (same cells, same order): progress
    /// is answered of planned, and a run whose total is not known yet says "of ?" with a bar that
    /// moves without a value, never a full one.
    static func runRow(_ row: RunListing.Row) -> String {
        let run = row.run
        let counts = row.counts
        let bar =
            row.planned.map { "<progress max=\"\(max($0, 1))\" value=\"\(min(row.answered, max($0, 1)))\"></progress>" }
            ?? "<progress></progress>"
        return "<tr data-run=\"\(run.id)\"><td><a href=\"/runs/\(run.id)\">\(run.id)</a></td>"
            + "<td>\(escape(run.campaign))</td>"
            + "<td><span class=\"status \(tone(run.status))\">\(run.status.rawValue)</span></td>"
            + "<td>\(bar) \(escape(progressText(row)))</td><td class=\"wide\">\(row.chart)</td>"
            + "<td class=\"num\">\(counts.delivered)</td><td class=\"num\">\(failedCell(row))</td>"
            + "<td class=\"num wide\">\(row.planned.map(String.init) ?? "?")</td>"
            + "<td class=\"wide\">\(Timestamps.text(run.startedAt))</td></tr>"
    }

    /// The failed count, with why ("12 · Unregistered 10, BadDeviceToken 2") linking to the
    /// report's outcomes: what the script writes too.
    static func failedCell(_ row: RunListing.Row) -> String {
        guard row.counts.failed > 0 else { return "0" }
        let why = row.failures.isEmpty ? "" : " · " + escape(row.failureText)
        return "<a href=\"/runs/\(row.run.id)#outcomes\">\(row.counts.failed)\(why)</a>"
    }

    /// "43 of 600 (7%) · 2m left", "43 of ?": what the script writes too.
    static func progressText(_ row: RunListing.Row) -> String {
        var text = row.progress + (row.percent.map { " (\($0)%)" } ?? "")
        if let eta = row.etaSeconds { text += " · \(duration(eta)) left" }
        return text
    }

    /// "45s", "12m", "2h 5m".
    static func duration(_ seconds: Int) -> String {
        if seconds < 90 { return "\(seconds)s" }
        if seconds < 90 * 60 { return "\((seconds + 30) / 60)m" }
        return "\(seconds / 3600)h \(seconds % 3600 / 60)m"
    }

    /// The overview at `/`.
    public func overview() -> String {
        var body = "<header><h1>Pushcamp <span id=\"ready\" class=\"status \(ready ? "good" : "bad")\">"
        body += ready ? "ready" : "not ready"
        body += "</span></h1><p class=\"meta\">journal \(Self.escape(status.journal)) · updated "
        body += "<span id=\"updated\">\(Timestamps.text(status.now))</span></p></header>\n"

        body +=
            "<section><h2>Runs</h2><div class=\"scroll\"><table id=\"runs\"><thead><tr><th>run</th><th>campaign</th>"
        body += "<th>status</th><th>progress</th><th class=\"wide\">per minute</th><th class=\"num\">delivered</th>"
        body += "<th class=\"num\">failed</th>"
        body += "<th class=\"num wide\">planned</th><th class=\"wide\">started</th></tr></thead><tbody>"
        body += runs.rows.isEmpty ? "<tr><td colspan=\"9\">no runs yet</td></tr>" : runs.rows.map(Self.runRow).joined()
        body += "</tbody></table></div><p class=\"note\">Each run links to its report.</p></section>\n"

        body +=
            "<section id=\"schedules\"><h2>Schedules</h2><div class=\"scroll\"><table><tr><th>campaign</th><th>schedule</th>"
        body += "<th>next slots</th><th>last fired</th></tr>"
        if schedules.entries.isEmpty { body += "<tr><td colspan=\"4\">no scheduled campaigns</td></tr>" }
        for entry in schedules.entries {
            let name = Self.escape(entry.campaign ?? entry.file)
            if let error = entry.error {
                body += "<tr><td>\(name)<br><span class=\"note\">\(Self.escape(entry.file))</span></td>"
                body += "<td colspan=\"3\"><span class=\"status bad\">invalid</span> \(Self.escape(error))</td></tr>"
                continue
            }
            let next = entry.nextSlots.map { Timestamps.text(Double($0)) }.joined(separator: "<br>")
            var last = "–"
            if let fired = entry.lastFired {
                last = Timestamps.text(Double(fired.slot))
                if let run = fired.run { last += " · <a href=\"/runs/\(run)\">run \(run)</a>" }
                if let record = entry.lastRun { last += " \(record.status.rawValue)" }
            }
            body += "<tr><td>\(name)<br><span class=\"note\">\(Self.escape(entry.file))</span></td>"
            body += "<td>\(Self.escape(entry.schedule.map { "\($0)" } ?? ""))</td><td>\(next.isEmpty ? "–" : next)</td>"
            body += "<td>\(last)</td></tr>"
        }
        body += "</table></div></section>\n"

        body += "<section class=\"pair\"><div class=\"scroll\"><h2>Health</h2><pre id=\"health\">"
        body += Self.escape(health) + "</pre></div><div class=\"scroll\" id=\"problems\"><h2>Problems</h2>"
        if status.problems.isEmpty {
            body += "<p class=\"empty\">none in the last day</p>"
        } else {
            body += "<table>"
            for problem in status.problems.prefix(20) {
                body += "<tr><td>\(problem.at.map(Timestamps.text) ?? "–")</td><td>\(Self.escape(problem.subject))"
                body += "<br><span class=\"note\">\(Self.escape(problem.message))</span></td></tr>"
            }
            body += "</table>"
        }
        body += "</div></section>\n"

        body += "<section class=\"pair\" id=\"appstore\"><div class=\"scroll\"><h2>App Store notifications</h2><table>"
        body += "<tr><th>received</th><th>type</th><th>app</th><th>kept</th></tr>"
        if notifications.records.isEmpty { body += "<tr><td colspan=\"4\">none received</td></tr>" }
        for record in notifications.records {
            let type = record.type + (record.subtype.map { "/\($0)" } ?? "")
            body += "<tr><td>\(Timestamps.text(record.receivedAt))</td><td>\(Self.escape(type))</td>"
            body += "<td>\(Self.escape(record.app ?? record.bundleID ?? "–"))</td>"
            body += "<td>\(record.disposition == .stored ? "stored" : "quarantined")</td></tr>"
        }
        body += "</table></div><div class=\"scroll\"><h2>Trigger firings</h2><table>"
        body += "<tr><th>due</th><th>campaign</th><th>status</th></tr>"
        if firings.firings.isEmpty { body += "<tr><td colspan=\"3\">none yet</td></tr>" }
        for firing in firings.firings {
            var state = Self.escape(firing.status.rawValue)
            if let run = firing.run { state += " · <a href=\"/runs/\(run)\">run \(run)</a>" }
            body += "<tr><td>\(Timestamps.text(firing.dueAt))</td><td>\(Self.escape(firing.campaign))</td>"
            body += "<td>\(state)</td></tr>"
        }
        body += "</table></div></section>\n"

        body += "<section id=\"dead\"><h2>Dead tokens</h2><div class=\"scroll\"><table><tr><th>topic</th>"
        body += "<th class=\"num\">total</th><th class=\"num\">last day</th></tr>"
        if status.deadTokens.isEmpty { body += "<tr><td colspan=\"3\">none remembered</td></tr>" }
        for dead in status.deadTokens {
            body += "<tr><td>\(Self.escape(dead.topic))</td><td class=\"num\">\(dead.total)</td>"
            body += "<td class=\"num\">\(dead.lastDay)</td></tr>"
        }
        body += "</table></div></section>\n"
        body += "<footer>Read-only. JSON: <a href=\"/api/runs\">/api/runs</a> · <a href=\"/api/schedules\">"
        body += "/api/schedules</a> · <a href=\"/api/status\">/api/status</a> · <a href=\"/api/health\">/api/health</a>"
        body += " · <a href=\"/api/notifications\">/api/notifications</a> · <a href=\"/api/firings\">/api/firings</a>"
        body += "</footer>"
        return Self.page(title: "Pushcamp console", body: body, script: Self.script)
    }

    /// Refreshes the runs table and the health every two seconds from the JSON, building rows with
    /// DOM calls and `textContent` (never HTML from data), and the other sections every ten from
    /// this page as the server renders it now.
    static let script = """
        (function(){
        var tones={finished:'good',running:'info',interrupted:'warn',cancelled:'bad',superseded:'bad'};
        function cell(tr,text,cls){var td=document.createElement('td');if(cls)td.className=cls;
        td.textContent=text;tr.appendChild(td);return td;}
        function span(s){if(s<90)return s+'s';if(s<5400)return Math.floor((s+30)/60)+'m';
        return Math.floor(s/3600)+'h '+Math.floor(s%3600/60)+'m';}
        function spark(a){if(!a)return null;var c=a.counts.slice(-60),peak=Math.max.apply(null,[0].concat(c));
        if(!peak)return null;var ns='http://www.w3.org/2000/svg',svg=document.createElementNS(ns,'svg');
        var label='answers per '+(a.bucket_seconds==60?'minute':(a.bucket_seconds/60)+' minutes')+': at most '+peak;
        svg.setAttribute('class','spark');svg.setAttribute('viewBox','0 0 '+c.length+' 20');
        svg.setAttribute('preserveAspectRatio','none');svg.setAttribute('role','img');svg.setAttribute('aria-label',label);
        var t=document.createElementNS(ns,'title');t.textContent=label;svg.appendChild(t);
        c.forEach(function(n,i){if(!n)return;var h=Math.max(1,20*n/peak),b=document.createElementNS(ns,'rect');
        b.setAttribute('x',i);b.setAttribute('y',Math.round((20-h)*10)/10);b.setAttribute('width','0.8');
        b.setAttribute('height',Math.round(h*10)/10);svg.appendChild(b);});return svg;}
        function when(iso){return iso.replace('T',' ').replace(/\\.\\d+Z$/,'Z').replace(/:\\d\\dZ$/,'Z');}
        function row(r){var tr=document.createElement('tr');tr.setAttribute('data-run',r.run);
        var a=document.createElement('a');a.href='/runs/'+r.run;a.textContent=r.run;
        cell(tr,'').appendChild(a);cell(tr,r.campaign);
        var badge=document.createElement('span');badge.className='status '+(tones[r.status]||'');
        badge.textContent=r.status;cell(tr,'').appendChild(badge);
        var done=r.delivered+r.failed;var p=document.createElement('progress');
        if(r.planned!=null){p.max=Math.max(r.planned,1);p.value=Math.min(done,Math.max(r.planned,1));}
        var td=cell(tr,'');td.appendChild(p);
        var text=' '+done+' of '+(r.planned==null?'?':r.planned)+(r.percent==null?'':' ('+r.percent+'%)');
        if(r.eta_seconds!=null)text+=' · '+span(r.eta_seconds)+' left';
        td.appendChild(document.createTextNode(text));
        var chart=cell(tr,'','wide'),svg=spark(r.answers_over_time);if(svg)chart.appendChild(svg);
        cell(tr,String(r.delivered),'num');var f=cell(tr,r.failed>0?'':'0','num');
        if(r.failed>0){var l=document.createElement('a');l.href='/runs/'+r.run+'#outcomes';
        var why=Object.keys(r.failed_by_reason||{}).map(function(k){return k+' '+r.failed_by_reason[k];}).join(', ');
        l.textContent=r.failed+(why?' · '+why:'');f.appendChild(l);}
        cell(tr,r.planned==null?'?':String(r.planned),'num wide');
        cell(tr,when(r.started_at),'wide');return tr;}
        function get(path){return fetch(path,{credentials:'same-origin',cache:'no-store'}).then(function(res){
        if(res.status===401){location.href='/login';throw new Error('signed out');}return res.json();});}
        function refresh(){
        get('/api/runs').then(function(runs){var body=document.querySelector('#runs tbody');
        if(!runs.length)return;var rows=document.createDocumentFragment();
        runs.slice(0,20).forEach(function(r){rows.appendChild(row(r));});
        body.replaceChildren(rows);
        document.getElementById('updated').textContent=when(new Date().toISOString());}).catch(function(){});
        get('/api/health').then(function(h){var b=document.getElementById('ready');
        b.textContent=h.ready?'ready':'not ready';b.className='status '+(h.ready?'good':'bad');
        document.getElementById('health').textContent=h.text;}).catch(function(){});}
        function sections(){fetch('/',{credentials:'same-origin',cache:'no-store'}).then(function(res){
        return (res.status===200&&!res.redirected)?res.text():null;}).then(function(html){if(!html)return;
        var doc=new DOMParser().parseFromString(html,'text/html');
        ['schedules','problems','appstore','dead'].forEach(function(id){var fresh=doc.getElementById(id),
        old=document.getElementById(id);if(fresh&&old)old.replaceWith(document.importNode(fresh,true));});
        }).catch(function(){});}
        setInterval(refresh,2000);setInterval(sections,10000);
        })();
        """

    /// `/login`: a form that keeps the token as a cookie; `failed` after a wrong one.
    public static func login(failed: Bool) -> String {
        var body = "<h1>Pushcamp console</h1><p class=\"meta\">This console needs its token "
        body += "(<code>\(ConsoleAccess.tokenVariable)</code> on the serve host).</p>"
        if failed { body += "<p class=\"status bad\" id=\"wrong\">That token is not the console's.</p>" }
        body += "<form method=\"post\" action=\"/login\"><p><label>Token <input type=\"password\" name=\"token\" "
        body += "autocomplete=\"current-password\" required></label> <button type=\"submit\">Open</button></p></form>"
        return page(title: "Pushcamp console: sign in", body: body)
    }
}
