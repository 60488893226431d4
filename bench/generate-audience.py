#!/usr/bin/env python3
"""Writes a CSV audience of N rows shaped like the spring-sale example's (token, first_name,
locale, platform, opted_in, tier, registered_at), deterministically: the same N gives the same file.
About 1% of rows are duplicates and 0.1% have bad tokens, so the planner's checks have work to do."""
import random
import sys

def main():
    count = int(sys.argv[1])
    path = sys.argv[2]
    rng = random.Random(20270320)
    names = ["Amélie", "Bruno", "Chloé", "Dario", "Emma", "Félix", "Gabriel", "Hanna", "Inès", "Jonas",
             "Kai", "Léa", "Marc", "Nora", "Oskar", "Paula", "Quentin", "Rosa", "Sami", "Tara", ""]
    locales = ["fr-FR", "fr-CA", "en-US", "de-DE", "fr", "en-GB", "pt_BR", "de-AT", "en", "fr-BE", "es-ES"]
    tiers = ["gold", "silver", "standard"]
    recent = []
    with open(path, "w", encoding="utf-8", buffering=1 << 20) as out:
        out.write("token,first_name,locale,platform,opted_in,tier,registered_at\n")
        for i in range(count):
            roll = rng.random()
            if roll < 0.01 and recent:
                token = rng.choice(recent)
            elif roll < 0.011:
                token = "not-a-token-%d" % i
            else:
                token = "%064x" % rng.getrandbits(256)
                if len(recent) < 1000:
                    recent.append(token)
                else:
                    recent[rng.randrange(1000)] = token
            platform = "ios" if rng.random() < 0.9 else "ipados"
            opted = "true" if rng.random() < 0.95 else "false"
            out.write("%s,%s,%s,%s,%s,%s,2026-%02d-%02d\n" % (
                token, rng.choice(names), rng.choice(locales), platform, opted, rng.choice(tiers),
                1 + i % 12, 1 + i % 28))

if __name__ == "__main__":
    main()
