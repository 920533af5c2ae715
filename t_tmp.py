import cProfile, pstats, time
from gtsteer.werewolf.steering import DistilledPlaystyleChooser
from gtsteer.werewolf.playstyles import TeamChooser
from gtsteer.werewolf.runner import GameRunner, create_game
from gtsteer.werewolf.store import GameStore
import uuid
store = GameStore("/tmp/i13p.sqlite")
ch = TeamChooser(DistilledPlaystyleChooser.load("/tmp/i13cli"), "both")
st = create_game(store, n_players=7, seed=5, game_id=uuid.uuid4().hex[:6], max_days=2, max_messages_per_day=3)
t=time.time()
cProfile.run("GameRunner(store, chooser=ch).run(st)", "/tmp/prof")
print(time.time()-t)
pstats.Stats("/tmp/prof").sort_stats("cumtime").print_stats(18)
