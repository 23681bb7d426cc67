-- a query written carelessly
select camera,count(*) n from shelves cross join lateral classify(image) c(label,score)
where score>0.8 group by camera,tumble(ts,interval '10' seconds) with(accuracy>=0.85);
show models
