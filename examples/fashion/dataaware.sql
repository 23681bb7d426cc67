-- Data-aware model choice (SneakPeek): the accuracy target holds on the data
-- the query sees, not on the test set's class mix. EXPLAIN weighs each
-- variant's per-class recall (catalog.yaml classes:) by the mix given with
-- --class-mix; a running query's mix is estimated live and the query is
-- re-planned when it shifts.
--   tierflow explain examples/fashion/dataaware.sql
--   tierflow explain --class-mix classify=Coat:40,Pullover:35,T-shirt/top:10,Dress:15 examples/fashion/dataaware.sql
SELECT id, c.label
FROM shelf
CROSS JOIN LATERAL classify(image) AS c(label, score)
WITH (ACCURACY >= 85 DATA AWARE, THROUGHPUT >= 1000 PER SECOND);
