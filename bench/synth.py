"""Deterministic synthetic conversations for ``bench/scale.py``.

Two people talk in sessions of ~20 turns; every turn is one of a few dozen templates filled from a
varied vocabulary (names, places, activities, foods, jobs, pets, dates) and padded with connective
clauses to 15-40 words, so BM25 and the embedder both see diverse, realistic text. Every fact
template has a matching question, and the questions asked by the benchmark are drawn from facts that
were actually stored. The small measurement helpers of the benchmark live at the end.
"""

from __future__ import annotations

import random
import sys
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterator

NAMES = ("Ana Ben Carla Dmitri Elif Farah Gustavo Hana Ines Jamal Kenji Lena Marco Nadia Omar Priya "
         "Quentin Rosa Sven Tariq Uma Viktor Wen Ximena Yusuf Zoe Aiko Bruno Chiara Diego Emeka Freya "
         "Goran Helga Ivan Julia Kofi Laila Mateo Noor Olga Pablo Rania Sami Tomas Ursula Vera Wanda "
         "Yara Zain Amara Boris Celine Dario Esme Felix Greta Hugo Isla Joel Kira Luca Mira Nico Oona "
         "Pedro Rhea Silas Tess Ugo Vlad Willa Yosef Zara Anouk Bea Cyrus Dana Ezra Flora Gideon").split()
PLACES = ("Lisbon Porto Kyoto Osaka Nairobi Lagos Oslo Bergen Quito Lima Cusco Hanoi Hue Tbilisi Baku "
          "Krakow Gdansk Seville Granada Bologna Turin Ghent Bruges Lyon Nantes Dublin Galway Cork "
          "Reykjavik Tromso Tallinn Riga Vilnius Sofia Plovdiv Izmir Antalya Tunis Fez Marrakesh "
          "Cairo Aswan Accra Kigali Zanzibar Durban Perth Hobart Auckland Nelson Vancouver Halifax "
          "Quebec Denver Austin Boise Tucson Savannah Memphis Oaxaca Merida Cartagena Medellin Santiago "
          "Valparaiso Mendoza Montevideo Salvador Recife Busan Taipei Cebu Penang Chiang-Mai").split()
ACTIVITIES = ["hiking", "rock climbing", "pottery", "salsa dancing", "birdwatching", "kayaking",
              "baking sourdough", "chess", "trail running", "knitting", "woodworking", "surfing",
              "painting watercolors", "playing the cello", "learning Portuguese", "yoga",
              "gardening", "photography", "cycling", "archery", "fencing", "scuba diving",
              "sailing", "calligraphy", "stand-up comedy", "volunteering at the shelter",
              "restoring old bikes", "brewing kombucha", "bouldering", "ice skating",
              "writing poetry", "playing drums", "making candles", "foraging mushrooms",
              "beekeeping", "origami", "tango", "judo", "skiing", "fly fishing", "embroidery",
              "coding a game", "building model trains", "swimming laps", "camping", "karaoke"]
FOODS = ["ramen", "paella", "tacos al pastor", "pierogi", "pho", "jollof rice", "shakshuka",
         "bibimbap", "moussaka", "pad thai", "ceviche", "khachapuri", "lasagna", "falafel",
         "dumplings", "curry laksa", "empanadas", "risotto", "banh mi", "gnocchi", "tagine",
         "feijoada", "borscht", "pupusas", "okonomiyaki", "baklava", "churros", "tiramisu"]
JOBS = ["nurse", "data analyst", "carpenter", "teacher", "architect", "pharmacist", "pilot",
        "chef", "software engineer", "librarian", "veterinarian", "electrician", "journalist",
        "translator", "physiotherapist", "accountant", "marine biologist", "barista",
        "graphic designer", "firefighter", "dentist", "lab technician", "park ranger"]
COMPANIES = ["Lumen Robotics", "Blue Heron Press", "Northwind Labs", "Cedar & Pine", "Orbital Foods",
             "Kestrel Health", "Tidewater Bank", "Juniper Studio", "Atlas Freight", "Maple Clinic",
             "Quartz Analytics", "Harbor Schools", "Solstice Energy", "Fennel Kitchen", "Granite Co"]
PETS = ["a beagle", "a tabby cat", "two goldfish", "a parrot", "a rescue greyhound", "a hamster",
        "a corgi", "a bearded dragon", "a husky", "three chickens", "a rabbit", "a border collie"]
PET_NAMES = ("Pixel Biscuit Mango Luna Pepper Ziggy Nori Waffles Olive Bean Cosmo Maple Tofu Juno "
             "Pickles Sushi Bambi Rocket Clover Peanut Mochi Gizmo").split()
THINGS = ["a vintage camera", "a used piano", "a new bike", "a telescope", "a sewing machine",
          "an electric kettle", "a tent", "a record player", "a laptop", "a kayak", "hiking boots",
          "a drone", "an espresso machine", "a 3D printer", "a standing desk", "a pair of skis"]
FEELINGS = ["thrilled", "nervous", "exhausted", "proud", "relieved", "a bit overwhelmed", "grateful",
            "restless", "excited", "homesick", "calm", "frustrated", "hopeful", "curious"]
WHEN = ["last weekend", "yesterday", "two weeks ago", "last summer", "on Tuesday", "this morning",
        "over the holidays", "last month", "in the spring", "a few days ago", "on my birthday",
        "next Friday", "in October", "at the end of March", "next month", "in early June"]
FILLER = ["to be honest", "you know how it is", "which I did not expect at all",
          "and it really made my week", "even though the weather was terrible",
          "after thinking about it for a long time", "because a friend recommended it",
          "and I took way too many photos", "so I am still processing it",
          "which reminded me of when we were kids", "and I want to do it again soon",
          "although it cost more than I planned", "and everyone was really kind about it",
          "while the kids were at school", "and honestly it was the highlight of the month"]

# (turn template, question template); slots: {me} speaker, {you} listener, {n} a third person.
FACTS = [
    ("I went {act} in {place} {when} with {n}, and I felt {feel} the whole time.",
     "When did {me} go {act} in {place}?"),
    ("{n} just started working as a {job} at {co}, in {place}.",
     "Where does {n} work now?"),
    ("We adopted {pet} {when}, we named it {petname}.",
     "What is the name of {me}'s pet?"),
    ("I finally bought {thing} {when}; {n} helped me pick it.",
     "What did {me} buy with {n}'s help?"),
    ("My favourite dish lately is {food}; {n} taught me how to cook it in {place}.",
     "Who taught {me} to cook {food}?"),
    ("I signed up for a {act} class in {place} that starts {when}.",
     "What class did {me} sign up for in {place}?"),
    ("{n} is moving to {place} {when} to take a job as a {job}.",
     "Why is {n} moving to {place}?"),
    ("I have been {act} every week since {when}, it helps me feel {feel}.",
     "How long has {me} been {act}?"),
    ("My sister {n} got engaged in {place} {when}, the wedding is next year.",
     "Where did {n} get engaged?"),
    ("I quit my job at {co} {when}, I want to become a {job}.",
     "Why did {me} quit {co}?"),
    ("We had {food} at a tiny place in {place} {when}, best meal of the trip.",
     "What was the best meal {me} had in {place}?"),
    ("{n} and I are planning a trip to {place} {when} to try {act}.",
     "Where are {me} and {n} planning to travel?"),
    ("I lost my {thing2} in {place} {when} and {n} found it at the station.",
     "Who found {me}'s lost {thing2}?"),
    ("My doctor said I should try {act} to relax, so I started {when}.",
     "Why did {me} start {act}?"),
    ("{petname} the dog chewed my {thing2} {when}; {n} could not stop laughing.",
     "What did {petname} chew?"),
]
CHATTER = [
    "How are you holding up, {you}? Last time you sounded {feel} about everything.",
    "That sounds amazing, {you}! Did you take any pictures {when}?",
    "Oh wow, I did not know that. How did {n} react when you told them?",
    "Honestly I have been {feel} lately, work at {co} has been a lot.",
    "We should meet up soon, maybe in {place}? I miss our long talks.",
    "Ha, that is so typical of {n}. Tell me everything about it.",
    "I keep thinking about trying {act} too, is it hard to get started?",
    "Did you ever finish that book {n} lent you? I am curious what you thought.",
]


def _fill(rng: random.Random, tpl: str, me: str, you: str) -> tuple[str, dict]:
    s = dict(me=me, you=you, n=rng.choice([x for x in NAMES if x not in (me, you)]),
             place=rng.choice(PLACES), act=rng.choice(ACTIVITIES), when=rng.choice(WHEN),
             feel=rng.choice(FEELINGS), job=rng.choice(JOBS), co=rng.choice(COMPANIES),
             pet=rng.choice(PETS), petname=rng.choice(PET_NAMES), thing=rng.choice(THINGS),
             food=rng.choice(FOODS))
    s["thing2"] = s["thing"].split(" ", 1)[1]
    return tpl.format(**s), s


def _pad(rng: random.Random, text: str) -> str:
    """Add connective clauses until the turn has 15-40 words."""
    target = rng.randint(15, 40)
    words = text.split()
    pool = FILLER + [f"and {rng.choice(NAMES)} says hi",
                     f"we might go back to {rng.choice(PLACES)} {rng.choice(WHEN)}"]
    rng.shuffle(pool)
    while len(words) < target and pool:
        extra = pool.pop()
        words = words[:-1] + [words[-1].rstrip(".!?") + ","] + extra.split()
        words[-1] = words[-1] + "."
    return " ".join(words[:40]).rstrip(",") if len(words) > 40 else " ".join(words)


class Synth:
    """An endless, seeded stream of sessions; remembers a sample of question-answerable facts."""

    def __init__(self, seed: int = 7, turns_per_session: int = 20, keep_questions: int = 4000):
        self.rng = random.Random(seed)
        self.turns = turns_per_session
        self.keep = keep_questions
        self.questions: list[str] = []
        self.n_sessions = 0
        self.t = datetime(2019, 1, 1, 9, 0)

    def sessions(self) -> Iterator[tuple[str, str, list[dict]]]:
        """(session_id, session_time ISO, [{content, speaker, ref}]) forever."""
        rng = self.rng
        while True:
            self.n_sessions += 1
            sid = f"bench-s{self.n_sessions:06d}"
            self.t += timedelta(hours=rng.randint(6, 60), minutes=rng.randint(0, 59))
            a, b = rng.sample(NAMES, 2)
            n_turns = max(2, self.turns + rng.randint(-3, 3))
            msgs = []
            for k in range(n_turns):
                me, you = (a, b) if k % 2 == 0 else (b, a)
                if rng.random() < 0.6:
                    tpl, qtpl = rng.choice(FACTS)
                    text, slots = _fill(rng, tpl, me, you)
                    self._keep_question(qtpl.format(**slots))
                else:
                    text, _ = _fill(rng, rng.choice(CHATTER), me, you)
                msgs.append({"content": _pad(rng, text), "speaker": me, "ref": f"{sid}:{k + 1}"})
            yield sid, self.t.isoformat(), msgs

    def _keep_question(self, q: str) -> None:
        """Reservoir sample, so questions cover the whole store, old sessions and new."""
        self._seen = getattr(self, "_seen", 0) + 1
        if len(self.questions) < self.keep:
            self.questions.append(q)
        else:
            j = self.rng.randrange(self._seen)
            if j < self.keep:
                self.questions[j] = q

    def pick_questions(self, n: int, seed: int) -> list[str]:
        """``n`` distinct questions (fewer only if fewer distinct facts exist)."""
        distinct = sorted(set(self.questions))
        random.Random(seed).shuffle(distinct)
        return distinct[:n]


# -- measurement helpers for bench/scale.py ------------------------------------------------
def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(xs: list[float], p: float) -> float:
    """Nearest-rank percentile, in ms (xs in seconds)."""
    s = sorted(xs)
    return round(1000 * s[min(len(s) - 1, max(0, int(round(p / 100 * len(s))) - 1))], 2)


def rss_mb() -> tuple[float, float]:
    """(peak, current) resident set size in MB (POSIX: ``resource`` exists only there)."""
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cur = next(int(line.split()[1]) for line in Path("/proc/self/status").read_text().splitlines()
               if line.startswith("VmRSS:")) / 1024
    return round(peak, 1), round(cur, 1)


def fragments(space, suffix: str) -> int | None:
    st = space.store.open_table(f"ns_{space.key}__{suffix}").stats()
    fs = st["fragment_stats"] if isinstance(st, dict) else st.fragment_stats
    return fs["num_fragments"] if isinstance(fs, dict) else fs.num_fragments


class Timed:
    """Wrap a real callable; keep the duration of every call (``bg``: calls from other threads,
    e.g. background curation, kept apart so they do not count as ingest embedding)."""

    def __init__(self, fn):
        self.fn, self.times, self.bg = fn, [], []

    def __call__(self, *a, **kw):
        t0 = time.perf_counter()
        try:
            return self.fn(*a, **kw)
        finally:
            main = threading.current_thread() is threading.main_thread()
            (self.times if main else self.bg).append(time.perf_counter() - t0)
