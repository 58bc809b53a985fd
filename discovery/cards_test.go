package discovery_test

import (
	"fmt"
	"strings"
)

// A deterministic generator of agent cards for the discovery benchmark
// and tests: 50 domains × 10 skills = 500 distinct agents whose cards
// (name, description, capabilities, example queries) overlap the way a
// real registry's do — the invoice extractor beside the invoice validator
// and the receipt extractor — and a hand-written labelled set of routing
// queries phrased as people ask, not as the cards read.

// domain is what an agent works on.
type domain struct {
	slug, noun, plural string
	// fields are what a document of the domain holds; context is where it
	// is used.
	fields  []string
	context string
}

var domains = []domain{
	{"invoice", "invoice", "invoices", []string{"vendor", "total amount", "due date", "line items"}, "accounts payable"},
	{"receipt", "receipt", "receipts", []string{"merchant", "amount paid", "sales tax", "purchase date"}, "expense reporting"},
	{"contract", "contract", "contracts", []string{"parties", "term", "renewal date", "governing law"}, "legal teams"},
	{"resume", "resume", "resumes", []string{"skills", "previous employers", "education", "years of experience"}, "recruiting"},
	{"support-ticket", "support ticket", "support tickets", []string{"customer", "priority", "product", "reported issue"}, "customer support"},
	{"email", "email", "emails", []string{"sender", "subject", "intent", "deadlines"}, "shared inboxes"},
	{"meeting-transcript", "meeting transcript", "meeting transcripts", []string{"decisions", "action items", "owners", "attendees"}, "team meetings"},
	{"bug-report", "bug report", "bug reports", []string{"stack trace", "component", "severity", "steps to reproduce"}, "issue trackers"},
	{"pull-request", "pull request", "pull requests", []string{"changed files", "risk", "reviewers", "test coverage"}, "code review"},
	{"server-log", "server log", "server logs", []string{"errors", "latency spikes", "status codes", "request ids"}, "operations"},
	{"sql-query", "SQL query", "SQL queries", []string{"tables", "joins", "indexes", "execution plan"}, "databases"},
	{"medical-record", "medical record", "medical records", []string{"diagnoses", "medications", "allergies", "lab results"}, "clinics"},
	{"insurance-claim", "insurance claim", "insurance claims", []string{"policy number", "damage", "claimed amount", "incident date"}, "insurers"},
	{"product-review", "product review", "product reviews", []string{"star rating", "sentiment", "complaints", "praise"}, "online shops"},
	{"news-article", "news article", "news articles", []string{"people", "places", "events", "quotes"}, "newsrooms"},
	{"research-paper", "research paper", "research papers", []string{"method", "datasets", "results", "citations"}, "academic research"},
	{"patent", "patent", "patents", []string{"claims", "prior art", "inventors", "filing date"}, "intellectual property"},
	{"social-post", "social media post", "social media posts", []string{"hashtags", "mentions", "sentiment", "reach"}, "social media teams"},
	{"recipe", "recipe", "recipes", []string{"ingredients", "quantities", "cooking steps", "cooking time"}, "home cooking"},
	{"flight-booking", "flight booking", "flight bookings", []string{"passenger", "route", "fare class", "departure time"}, "business travel"},
	{"hotel-reservation", "hotel reservation", "hotel reservations", []string{"guest", "check-in date", "room type", "rate"}, "hospitality"},
	{"shipping-manifest", "shipping manifest", "shipping manifests", []string{"containers", "weights", "ports", "consignee"}, "logistics"},
	{"bank-statement", "bank statement", "bank statements", []string{"transactions", "balance", "fees", "account holder"}, "personal finance"},
	{"tax-return", "tax return", "tax returns", []string{"income", "deductions", "filing status", "refund"}, "tax preparation"},
	{"purchase-order", "purchase order", "purchase orders", []string{"items", "quantities", "supplier", "delivery date"}, "procurement"},
	{"job-posting", "job posting", "job postings", []string{"job title", "salary range", "requirements", "location"}, "hiring"},
	{"lease", "lease agreement", "lease agreements", []string{"monthly rent", "security deposit", "tenant", "lease term"}, "property management"},
	{"property-listing", "property listing", "property listings", []string{"bedrooms", "asking price", "neighbourhood", "square footage"}, "real estate"},
	{"survey", "survey response", "survey responses", []string{"satisfaction scores", "free-text comments", "segments", "response rate"}, "market research"},
	{"sales-call", "sales call note", "sales call notes", []string{"objections", "next steps", "deal size", "competitors"}, "sales teams"},
	{"campaign", "marketing campaign", "marketing campaigns", []string{"channels", "budget", "conversions", "click-through rate"}, "marketing"},
	{"security-alert", "security alert", "security alerts", []string{"indicators of compromise", "affected hosts", "severity", "attack technique"}, "security operations"},
	{"firewall-rule", "firewall rule set", "firewall rule sets", []string{"ports", "source addresses", "VLANs", "routes"}, "network engineering"},
	{"k8s-manifest", "Kubernetes manifest", "Kubernetes manifests", []string{"deployments", "resource limits", "probes", "replicas"}, "platform engineering"},
	{"terraform-plan", "Terraform plan", "Terraform plans", []string{"resources changed", "resources destroyed", "drift", "providers"}, "infrastructure as code"},
	{"openapi-spec", "OpenAPI specification", "OpenAPI specifications", []string{"endpoints", "parameters", "response schemas", "authentication"}, "API design"},
	{"source-file", "source code file", "source code files", []string{"functions", "cyclomatic complexity", "dead code", "dependencies"}, "software engineering"},
	{"test-report", "test report", "test reports", []string{"failing tests", "flaky tests", "coverage", "duration"}, "continuous integration"},
	{"postmortem", "incident postmortem", "incident postmortems", []string{"timeline", "root cause", "impact", "follow-up actions"}, "site reliability"},
	{"earnings-report", "quarterly earnings report", "quarterly earnings reports", []string{"revenue", "margins", "guidance", "earnings per share"}, "investor relations"},
	{"stock-price", "stock price series", "stock price series", []string{"trend", "volatility", "moving averages", "trading volume"}, "trading desks"},
	{"weather-forecast", "weather forecast", "weather forecasts", []string{"temperature", "precipitation", "wind speed", "storm warnings"}, "meteorology"},
	{"sensor-reading", "machine sensor reading", "machine sensor readings", []string{"vibration", "temperature", "thresholds", "machine id"}, "factory floors"},
	{"energy-meter", "energy meter reading", "energy meter readings", []string{"kilowatt hours", "peak demand", "tariff", "meter id"}, "utilities"},
	{"vehicle-telemetry", "vehicle telemetry log", "vehicle telemetry logs", []string{"speed", "fuel level", "fault codes", "GPS position"}, "fleet management"},
	{"student-essay", "student essay", "student essays", []string{"thesis", "grammar", "structure", "sources"}, "teachers"},
	{"syllabus", "course syllabus", "course syllabi", []string{"topics", "readings", "grading scheme", "schedule"}, "universities"},
	{"court-opinion", "court opinion", "court opinions", []string{"holding", "judges", "precedents", "dissent"}, "case law research"},
	{"regulation", "regulatory filing", "regulatory filings", []string{"obligations", "deadlines", "penalties", "regulator"}, "compliance"},
	{"podcast", "podcast transcript", "podcast transcripts", []string{"topics", "speakers", "quotes", "timestamps"}, "media producers"},
}

// skill is what an agent does to its domain; its texts are templates over
// the domain (%[1]s noun, %[2]s plural, %[3]s the fields joined, %[4]s the
// first field, %[5]s the second, %[6]s the context).
type skill struct {
	suffix, capability, description string
	examples                        []string
}

var skills = []skill{
	{"summarizer", "summarize_%s", "Summarizes %[2]s into a short brief for %[6]s, keeping the %[4]s and %[5]s.",
		[]string{"summarize this %[1]s", "give me the gist of these %[2]s"}},
	{"extractor", "extract_%s_fields", "Extracts structured fields (%[3]s) from %[2]s and returns them as JSON.",
		[]string{"pull the %[4]s and %[5]s out of this %[1]s", "extract fields from a %[1]s"}},
	{"classifier", "classify_%s", "Classifies %[2]s by category and urgency so that %[6]s can route them.",
		[]string{"which category does this %[1]s belong to", "tag these %[2]s by type"}},
	{"translator", "translate_%s", "Translates %[2]s between English, French, German and Spanish, preserving %[4]s and formatting.",
		[]string{"translate this %[1]s into German", "French version of the %[1]s"}},
	{"search", "search_%s", "Searches an archive of %[2]s by keyword and meaning and returns the best matches.",
		[]string{"find %[2]s that mention %[4]s", "look up old %[2]s"}},
	{"validator", "validate_%s", "Checks %[2]s for missing or inconsistent %[3]s and reports every problem found.",
		[]string{"is anything missing from this %[1]s", "check the %[1]s for errors"}},
	{"anomaly-detector", "detect_%s_anomalies", "Detects unusual %[2]s, outliers in %[4]s or %[5]s, and flags them for review.",
		[]string{"flag anything unusual in these %[2]s", "spot outliers in %[4]s"}},
	{"reporter", "report_%s", "Writes a detailed report with tables and trends across many %[2]s for %[6]s.",
		[]string{"write a monthly report on our %[2]s", "trend report for %[2]s"}},
	{"qa", "answer_%s_questions", "Answers questions about one %[1]s in plain language, citing the passage it relies on.",
		[]string{"what does this %[1]s say about %[4]s", "question about a %[1]s"}},
	{"converter", "convert_%s", "Converts %[2]s between formats (PDF, CSV, JSON, XML) without losing %[4]s.",
		[]string{"turn these %[2]s into a CSV", "export the %[1]s as JSON"}},
}

// card is one generated agent.
type card struct {
	name, description string
	capabilities      []string
	examples          []string
}

// cardOf is the agent that does skill s to domain d.
func cardOf(d domain, s skill) card {
	args := []any{d.noun, d.plural, strings.Join(d.fields, ", "), d.fields[0], d.fields[1], d.context}
	c := card{
		name:         d.slug + "-" + s.suffix,
		description:  fmt.Sprintf(s.description, args...),
		capabilities: []string{fmt.Sprintf(s.capability, strings.ReplaceAll(d.slug, "-", "_"))},
	}
	for _, e := range s.examples {
		c.examples = append(c.examples, fmt.Sprintf(e, args...))
	}
	return c
}

// routingQuery is a query and the agent that should get it.
type routingQuery struct{ query, want string }

// routingQueries are written the way people ask, not the way cards read:
// each names its domain and what it wants done in its own words.
var routingQueries = []routingQuery{
	{"what's the total and the due date on this invoice from Acme", "invoice-extractor"},
	{"give me a quick summary of yesterday's meeting transcript with the action items", "meeting-transcript-summarizer"},
	{"translate the attached contract into Spanish", "contract-translator"},
	{"find old support tickets where customers reported login failures", "support-ticket-search"},
	{"is this purchase order missing a supplier or a delivery date", "purchase-order-validator"},
	{"flag weird spikes in last week's energy meter readings", "energy-meter-anomaly-detector"},
	{"write a quarterly report on trends in our insurance claims", "insurance-claim-reporter"},
	{"does the lease agreement say anything about the security deposit", "lease-qa"},
	{"convert these bank statements to CSV so I can load them in a spreadsheet", "bank-statement-converter"},
	{"is this security alert critical or just noise, what type is it", "security-alert-classifier"},
	{"list the skills and previous employers from this resume", "resume-extractor"},
	{"summarize the research paper's method and results", "research-paper-summarizer"},
	{"which of these bug reports are about the payments component, sort them by category", "bug-report-classifier"},
	{"search our archive of court opinions for precedents on fair use", "court-opinion-search"},
	{"check the tax return for inconsistent deductions", "tax-return-validator"},
	{"any outliers in vibration from the machine sensor readings on line 3", "sensor-reading-anomaly-detector"},
	{"what does the syllabus say about the grading scheme", "syllabus-qa"},
	{"export this OpenAPI specification as JSON instead of YAML", "openapi-spec-converter"},
	{"translate these product reviews from German to English", "product-review-translator"},
	{"monthly report on marketing campaign conversions by channel", "campaign-reporter"},
	{"pull the policy number and claimed amount from this insurance claim", "insurance-claim-extractor"},
	{"short brief of today's news articles for the morning meeting", "news-article-summarizer"},
	{"find podcast transcripts where the speakers talk about open source", "podcast-search"},
	{"is this Kubernetes manifest missing resource limits or probes", "k8s-manifest-validator"},
	{"sort the incoming emails by intent and urgency", "email-classifier"},
	{"which incident postmortem mentions a root cause in DNS", "postmortem-search"},
	{"what does the patent claim, in plain words", "patent-qa"},
	{"detect fraud-looking transactions in my bank statement", "bank-statement-anomaly-detector"},
	{"give me the gist of the sales call notes and the next steps", "sales-call-summarizer"},
	{"get the ingredients and quantities out of this recipe", "recipe-extractor"},
	{"write a weekly trend report on test reports: failing and flaky tests", "test-report-reporter"},
	{"put this court opinion into French", "court-opinion-translator"},
	{"classify these job postings by role type", "job-posting-classifier"},
	{"turn the shipping manifests into XML for the customs system", "shipping-manifest-converter"},
	{"does the regulatory filing mention penalties for late reporting", "regulation-qa"},
	{"check this Terraform plan for drift or destroyed resources that look wrong", "terraform-plan-validator"},
	{"summarize the quarterly earnings report: revenue, margins and guidance", "earnings-report-summarizer"},
	{"extract the passenger and route from this flight booking confirmation", "flight-booking-extractor"},
	{"look up property listings in the neighbourhood with three bedrooms", "property-listing-search"},
	{"flag unusual fault codes in the vehicle telemetry logs", "vehicle-telemetry-anomaly-detector"},
	{"categorize these survey responses by segment and sentiment", "survey-classifier"},
	{"translate the medical record for a patient who speaks Spanish", "medical-record-translator"},
	{"is there anything inconsistent in this hotel reservation, like the check-in date", "hotel-reservation-validator"},
	{"report on server log errors and latency spikes across the month", "server-log-reporter"},
	{"what does this pull request change, and is it risky", "pull-request-qa"},
	{"convert the weather forecasts to CSV", "weather-forecast-converter"},
	{"find social media posts mentioning our brand hashtag", "social-post-search"},
	{"grade-check this student essay: does the thesis hold, any grammar errors", "student-essay-validator"},
}

// agentCards returns n distinct cards: every labelled query's agent first,
// then the rest of the 500 in domain-major order. n is at most 500.
func agentCards(n int) []card {
	all := make([]card, 0, len(domains)*len(skills))
	byName := map[string]int{}
	for _, d := range domains {
		for _, s := range skills {
			byName[d.slug+"-"+s.suffix] = len(all)
			all = append(all, cardOf(d, s))
		}
	}
	out := make([]card, 0, n)
	taken := map[string]bool{}
	for _, q := range routingQueries {
		if i, ok := byName[q.want]; ok && !taken[q.want] && len(out) < n {
			taken[q.want] = true
			out = append(out, all[i])
		}
	}
	for _, c := range all {
		if len(out) == n {
			break
		}
		if !taken[c.name] {
			taken[c.name] = true
			out = append(out, c)
		}
	}
	return out
}
