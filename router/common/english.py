"""English words that the routing and memory rules read."""

# Verbs that ask the assistant to act: a sentence that holds one asks for something.
ACTION_VERBS = (
    "help|find|search|look|book|reserve|order|buy|get|give|show|tell|list|send|email|text|call|message|page|"
    "notify|ping|remind|schedule|set|create|make|add|put|open|close|cancel|delete|remove|update|change|move|"
    "check|compute|calculate|convert|translate|recommend|suggest|plan|write|draft|compose|summarize|summarise|"
    "explain|describe|compare|fetch|retrieve|run|start|stop|restart|deploy|roll|scale|merge|upload|download|"
    "share|use|let|lets|go|try|sort|filter|display|play|turn|pick|choose|select|generate|predict|estimate|"
    "determine|identify|analyze|analyse|provide|return|fix|apply|forward|issue|place|reply|rollback|track|"
    "trigger|pay|reset|pause|resume|reschedule|rebook|renew|extend|transfer|archive|restore|subscribe|"
    "unsubscribe|wake|rename|assign|approve|reject|refund|print|save|edit|mute|invite|submit|verify|validate|"
    "acknowledge|resolve|enable|disable|install|sync|drop"
)

# Abbreviations after which a full stop does not end a sentence ("Dr. Smith", "dr. Smith", "St. Louis", "room No. 5"),
# as lookbehinds; "St." ends one when a request follows ("I live on Baker St. Book a cab").
ABBREVIATIONS = (
    r"(?<!\b[Mm]r\.)(?<!\b[Mm]rs\.)(?<!\b[Mm]s\.)(?<!\b[Dd]r\.)(?<!\b[Pp]rof\.)(?<!\bvs\.)(?<!\be\.g\.)(?<!\bi\.e\.)"
    r"(?!(?<=\b[Nn]o\.)\s++\d)"
    rf"(?:(?<!\bSt\.)|(?<=\bSt\.)(?=\s+(?i:{ACTION_VERBS})\b))"
)
